#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian package Allox OS needs to build, run and test,
# and creates the system user sandboxed programs run as.
# Idempotent: packages already present are left alone and apt is only
# consulted when something is missing.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  # core libraries
  libcaf-dev libuv1-dev libboost-json1.81-dev libboost-url1.81-dev
  libboost1.81-dev
  libbtrfsutil-dev libsqlite3-dev libcli11-dev doctest-dev libseccomp-dev
  # tar streams of bulk file transfers
  libarchive-dev
  # SHA-256 of the E2B front's signed file URLs
  libssl-dev
  # alloxctl configuration (TOML)
  libcpptoml-dev
  # kernel-facing runtime tools
  btrfs-progs bubblewrap util-linux mount e2fsprogs procps
  # eBPF toolchain (tracker)
  clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev
  # benchmarks and manual checks
  wrk curl jq sqlite3 python3 linux-perf
  # benchmark plots (bench/plot.py)
  python3-matplotlib
  # the operator console's page test (headless)
  chromium
  # deployment manifest tests (YAML parser)
  python3-yaml
  # guest image: built from Debian's packages, booted in QEMU
  mmdebstrap qemu-system-x86 qemu-utils fdisk e2fsprogs
)

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: run as root (apt-get needs it)" >&2
  exit 1
fi

# The user sandboxed programs run as (the daemon's --sandbox-user
# default): a system account with no home and no login.
if ! getent passwd allox-sandbox >/dev/null; then
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin allox-sandbox
  echo "install-deps: created the system user allox-sandbox"
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
