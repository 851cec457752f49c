#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bench/run_logs.sh [BUILD_DIR]: what a run start adds when its session's
# logs are a subvolume at the session's share (the guest's data disk;
# guest/store/run_output.hpp), against the raw work every run start does:
# its directory and three log files. On a scratch 1 GiB Btrfs image
# (quotas on), mounted and removed again whatever happens. As root.
set -euo pipefail
build=${1:-$(cd "$(dirname "$0")/.." && pwd)/build/release}
count=${BENCH_COUNT:-5000}
work=$(mktemp -d /tmp/allox-run-logs.XXXXXX)
cleanup() {
  mountpoint -q "$work/mnt" && umount "$work/mnt"
  rm -rf "$work"
}
trap cleanup EXIT
truncate -s 1G "$work/disk.img"
mkfs.btrfs -q "$work/disk.img" >/dev/null
mkdir "$work/mnt"
# A loop device with autoclear: it goes with the mount.
mount -o loop "$work/disk.img" "$work/mnt"
"$build/bin/allox-bench" run-logs --dir "$work/mnt" --count "$count"
