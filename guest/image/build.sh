#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# guest/image/build.sh OUT_DIR [CACHE_DIR]: the Allox OS guest image.
#
# Debian 12 (mmdebstrap, Debian's packages only) with Debian's kernel,
# bubblewrap, btrfs-progs, the runtime libraries of our binaries (found
# with ldd) and the binaries of a build tree, plus the units of deploy/systemd
# and the scripts of guest/image/files. Run as root.
#
# OUT_DIR receives:
#   allox-guest.raw    disk, one ext4 partition (root=/dev/vda1): Kata's
#                      guest image layout, and a plain VM's root disk
#   allox-guest.qcow2  the same disk as qcow2
#   vmlinuz, initrd.img  Debian's kernel and initramfs, for direct boot
#   kernel.config      that kernel's configuration (kernel/check-config)
#   manifest.txt       every Debian package and version, our binaries' sums
# CACHE_DIR (optional) keeps the Debian packages and the base tree between
# runs: a rebuild with the same package list reuses the base and only
# installs our files again.
#
# Environment:
#   ALLOX_BUILD_DIR  build tree with the binaries (default: build/ci, else
#                    build/release, of this checkout)
#   ALLOX_MIRROR     Debian mirror (default: http://deb.debian.org/debian)
#   ALLOX_GUEST_KERNEL  bookworm (default: Debian 12's 6.1, Btrfs full
#                    quotas) or backports (bookworm-backports' 6.12, simple
#                    quotas)
#   ALLOX_ROOTFS_TAR=1  also write rootfs.tar (for `podman import`: the
#                    container image of deploy/kubernetes/statefulset.yaml)
#   SOURCE_DATE_EPOCH  timestamps in the image (default: the last commit's)
set -euo pipefail

usage() { echo "usage: $0 OUT_DIR [CACHE_DIR]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
say() { echo "build.sh: $*"; }
die() { echo "build.sh: $*" >&2; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[[ $(id -u) -eq 0 ]] || die "run as root (mmdebstrap, file ownership)"
for tool in mmdebstrap mkfs.ext4 sfdisk qemu-img dpkg ldd; do
  command -v "$tool" >/dev/null || die "$tool is missing: scripts/install-deps.sh installs it"
done

mkdir -p "$1"
out=$(cd "$1" && pwd)
cache=
if [[ $# -eq 2 ]]; then mkdir -p "$2"; cache=$(cd "$2" && pwd); fi
mirror=${ALLOX_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)}
started=$SECONDS

# -- our binaries ----------------------------------------------------------
build=${ALLOX_BUILD_DIR:-}
if [[ -z $build ]]; then
  for d in "$repo/build/ci" "$repo/build/release"; do
    [[ -x $d/bin/allox-workspace-daemon ]] && { build=$d; break; }
  done
fi
[[ -n $build ]] || die "no build tree with bin/allox-workspace-daemon; build first (README)"

# name -> where it goes in the image. Required ones first.
declare -A dest=(
  [allox-workspace-daemon]=/usr/sbin
  [allox-sandbox-init]=/usr/libexec/allox
  [allox-turn]=/usr/libexec/allox
  [allox-share]=/usr/libexec/allox
  [allox-network]=/usr/libexec/allox
  [allox-guest-bootstrap]=/usr/sbin
  [allox-process-tracker]=/usr/libexec/allox
  [allox]=/usr/bin
  [alloxctl]=/usr/bin
)
required=(allox-workspace-daemon allox-sandbox-init allox-turn allox-share allox-network)
declare -A found=()
for name in "${!dest[@]}"; do
  path=$(find "$build" -type f -perm -u+x -name "$name" -not -path '*/CMakeFiles/*' 2>/dev/null | sort | head -n1)
  [[ -n $path ]] && found[$name]=$path
done
for name in "${required[@]}"; do
  [[ -n ${found[$name]:-} ]] || die "$name not found in $build"
done
[[ -n ${found[allox-guest-bootstrap]:-} ]] || \
  echo "build.sh: WARNING: allox-guest-bootstrap not in $build: the image boots without the readiness check (its unit says so on the console)" >&2
say "binaries from $build: ${!found[*]}"

# -- Debian packages -------------------------------------------------------
# The runtime libraries of our binaries: the Debian package of every
# library ldd names (both sides run Debian 12, so versions match).
lib_packages() {
  local lib pkg
  for lib in $(ldd "$@" | awk '$3 ~ /^\// {print $3} $1 ~ /^\/.*[^:]$/ {print $1}' | sort -u); do
    pkg=
    for p in "$lib" "/usr$lib" "${lib#/usr}" "$(readlink -f "$lib")"; do
      pkg=$(dpkg -S "$p" 2>/dev/null | head -n1 | cut -d: -f1) && [[ -n $pkg ]] && break
    done
    [[ -n $pkg ]] || die "no Debian package owns $lib (needed by our binaries)"
    echo "$pkg"
  done
}
lib_list=$(lib_packages "${found[@]}")
# bookworm's 6.1 has Btrfs full quotas only; bookworm-backports' 6.12 has
# simple quotas (6.7 and later), under which a session's disk share holds
# its checkpoints (guest/os/btrfs_quota.hpp). Under QEMU TCG the 6.12
# image wants one thread for its vCPUs (guest/image/vm.sh).
sources=("$mirror")
case ${ALLOX_GUEST_KERNEL:-bookworm} in
  bookworm) kernel=linux-image-amd64 ;;
  backports)
    kernel=linux-image-amd64/$suite-backports
    sources=("deb $mirror $suite main" "deb $mirror $suite-backports main") ;;
  *) die "ALLOX_GUEST_KERNEL is bookworm or backports, not ${ALLOX_GUEST_KERNEL}" ;;
esac
mapfile -t packages < <(printf '%s\n' \
  "$kernel" initramfs-tools systemd systemd-sysv udev dbus kmod \
  bubblewrap btrfs-progs util-linux mount e2fsprogs procps iproute2 \
  $lib_list | sort -u)
say "Debian packages: ${packages[*]}"

# -- the base tree (cached) --------------------------------------------------
# Its key: everything that changes what mmdebstrap produces.
recipe_version=1
key=$(printf '%s\n' "$recipe_version" "$suite" "$mirror" "${packages[@]}" | sha256sum | cut -c1-16)
base=${cache:-$out}/base-$key.tar
if [[ -s $base ]]; then
  say "base tree from cache: $base"
else
  hooks=()
  if [[ -n $cache ]]; then
    mkdir -p "$cache/debs"
    hooks+=(--skip=download/empty --skip=essential/unlink
      --setup-hook='mkdir -p "$1"/var/cache/apt/archives/'
      --setup-hook="sync-in $cache/debs /var/cache/apt/archives/"
      --customize-hook="sync-out /var/cache/apt/archives $cache/debs"
      --customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb')
  fi
  say "mmdebstrap $suite (cold: downloads the packages)"
  rm -f "$base.part"
  # force-unsafe-io: dpkg skips its fsync per unpacked file; the tree ends
  # up in a tar that is renamed into place only when mmdebstrap succeeds.
  mmdebstrap --mode=root --variant=minbase --format=tar \
    --dpkgopt=force-unsafe-io \
    --include="$(IFS=,; echo "${packages[*]}")" \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='chroot "$1" dpkg-query -W -f "\${Package} \${Version}\n" > "$1"/usr/share/allox-os-packages.txt' \
    "${hooks[@]}" \
    "$suite" "$base.part" "${sources[@]}"
  mv "$base.part" "$base"
  # Older bases of other package lists are of no further use.
  [[ -n $cache ]] && find "$cache" -maxdepth 1 -name 'base-*.tar' ! -name "base-$key.tar" -delete
fi

# -- staging: the base plus our files --------------------------------------
staging=$out/.staging
cleanup() { rm -rf "$staging" "$out/root.ext4"; }
trap cleanup EXIT
rm -rf "$staging"
mkdir -p "$staging"
tar --numeric-owner --xattrs --xattrs-include='*' -xpf "$base" -C "$staging"

for name in "${!found[@]}"; do
  install -D -m 0755 "${found[$name]}" "$staging${dest[$name]}/$name"
done
cp -a --no-preserve=ownership "$here/files/." "$staging/"
install -d -m 0755 "$staging/usr/lib/systemd/system"
install -m 0644 "$repo"/deploy/systemd/*.service "$staging/usr/lib/systemd/system/"
install -D -m 0644 "$repo/docs/deploy.md" "$staging/usr/share/doc/allox-os/deploy.md" 2>/dev/null || true
install -d -m 0700 "$staging/etc/allox"
install -d -m 0755 "$staging/var/lib/allox/workspaces" "$staging/var/lib/allox/runs"
# The user sandboxed programs run as (the daemon's --sandbox-user).
chroot "$staging" useradd --system --user-group --no-create-home \
  --home-dir /nonexistent --shell /usr/sbin/nologin allox-sandbox

# Units: ours, and DHCP on the first network device through networkd.
wants=$staging/etc/systemd/system/multi-user.target.wants
mkdir -p "$wants" "$staging/etc/systemd/system/sockets.target.wants"
for unit in allox-data-disk.service allox-guest-bootstrap.service \
            allox-workspace-daemon.service; do
  ln -sf "/usr/lib/systemd/system/$unit" "$wants/$unit"
done
ln -sf /lib/systemd/system/systemd-networkd.service "$wants/systemd-networkd.service"
ln -sf /lib/systemd/system/systemd-networkd.socket \
  "$staging/etc/systemd/system/sockets.target.wants/systemd-networkd.socket"
mkdir -p "$staging/etc/systemd/network"
cat >"$staging/etc/systemd/network/80-allox.network" <<'EOF'
[Match]
Name=en* eth*

[Network]
DHCP=yes
EOF
echo allox-guest >"$staging/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 allox-guest\n::1 localhost\n' >"$staging/etc/hosts"
echo 'LABEL=allox-root / ext4 defaults,noatime,errors=remount-ro 0 1' >"$staging/etc/fstab"
: >"$staging/etc/machine-id"   # a fresh one on each machine's first boot

# Kernel modules a guest never loads (sound, graphics, radios, ...):
# less to copy into every image.
kver=$(basename "$(ls -d "$staging"/lib/modules/*)")
for d in sound drivers/gpu drivers/media drivers/net/wireless drivers/infiniband \
         drivers/staging drivers/bluetooth drivers/iio drivers/isdn net/bluetooth \
         net/wireless net/mac80211; do
  rm -rf "$staging/lib/modules/$kver/kernel/$d"
done
chroot "$staging" depmod "$kver"

cp "$staging/boot/vmlinuz-$kver" "$out/vmlinuz"
cp "$staging/boot/initrd.img-$kver" "$out/initrd.img"
cp "$staging/boot/config-$kver" "$out/kernel.config"
{
  echo "# Allox OS guest image: Debian $suite, kernel $kver"
  echo "# binaries (sha256):"
  for name in $(printf '%s\n' "${!found[@]}" | sort); do
    echo "#   $name $(sha256sum <"${found[$name]}" | cut -c1-64)"
  done
  cat "$staging/usr/share/allox-os-packages.txt"
} >"$out/manifest.txt"

# Timestamps of what we added: the commit's time, not the build's.
find "$staging" -newermt "@$SOURCE_DATE_EPOCH" -print0 |
  xargs -0r touch -h -d "@$SOURCE_DATE_EPOCH"

if [[ ${ALLOX_ROOTFS_TAR:-0} == 1 ]]; then
  tar --numeric-owner --xattrs --sort=name --mtime="@$SOURCE_DATE_EPOCH" \
    -C "$staging" -cf "$out/rootfs.tar" .
fi

# -- the disk ----------------------------------------------------------------
# Root filesystem: the tree plus a quarter free, in whole 64 MiB.
used=$(du -sm --apparent-size "$staging" | cut -f1)
size_mb=$(( (used * 5 / 4 + 256 + 63) / 64 * 64 ))
uuid=7a1e0c5e-a110-4f05-9e57-${key:0:12}
rm -f "$out/root.ext4"
E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH mkfs.ext4 -q -F -L allox-root -U "$uuid" \
  -E "hash_seed=$uuid,root_owner=0:0" -d "$staging" "$out/root.ext4" "${size_mb}M"
rm -f "$out/allox-guest.raw"
truncate -s $(( (size_mb + 2) * 1024 * 1024 )) "$out/allox-guest.raw"
sfdisk -q "$out/allox-guest.raw" <<EOF
label: dos
label-id: 0xa110c5e1
start=2048, type=83, bootable
EOF
dd if="$out/root.ext4" of="$out/allox-guest.raw" bs=1M seek=1 conv=notrunc,sparse status=none
rm -f "$out/allox-guest.qcow2"
qemu-img convert -O qcow2 "$out/allox-guest.raw" "$out/allox-guest.qcow2"
# The images on disk before anything boots them: their gigabytes of
# writeback would otherwise stall the first VM's flushes (a checkpoint's
# commit waited 467 ms behind it) and land in its measurements.
sync -f "$out/allox-guest.raw"

say "done in $((SECONDS - started)) s: $out/allox-guest.raw (${size_mb} MiB root), allox-guest.qcow2, vmlinuz, initrd.img (kernel $kver)"
