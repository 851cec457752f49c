#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench/guest_density.sh [IMAGE_DIR]: bench/density.py against the daemon
# in the guest VM (the image of guest/image/build.sh; default
# build/ci/guest-image), with 3 GiB of memory. KVM when it works, else TCG:
# the latencies are then TCG's, comparable only within the run.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
image=${1:-$repo/build/ci/guest-image}
export ALLOX_VM_MEMORY=${ALLOX_VM_MEMORY:-3072}
source "$repo/guest/image/vm.sh" "$image"
boot 1
wait_health || { tail -n 40 "$console"; exit 1; }
python3 "$repo/bench/density.py" "$base" "$token"
rc=$?
power_off
exit $rc
