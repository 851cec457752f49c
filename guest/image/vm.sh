# SPDX-License-Identifier: Apache-2.0
# guest/image/vm.sh: sourced by guest/image/boot-test.sh and
# bench/guest_density.sh with the image's directory as $1. Boots the image
# of guest/image/build.sh in QEMU with a fresh 4 GiB data disk and reaches
# the daemon through a forwarded loopback port: $base, $token. KVM when
# /dev/kvm works (with -cpu qemu64), TCG otherwise. Leaves nothing running.
#
#   ALLOX_BOOT_TIMEOUT  seconds to wait for /health (default 120, TCG 300)
#   ALLOX_TEST_PORT     host port forwarded to the guest's 8092 (default: free)
#   ALLOX_VM_MEMORY     the VM's memory in MiB (default 1536)
#   ALLOX_TCG_THREAD    QEMU's TCG threading without KVM: single (default,
#                       one host thread for both vCPUs) or multi

out=$(cd "$1" && pwd) || exit 2
for f in allox-guest.raw vmlinuz initrd.img; do
  [[ -s $out/$f ]] || { echo "$0: $out/$f missing: run guest/image/build.sh first" >&2; exit 2; }
done
for tool in qemu-system-x86_64 qemu-img curl jq python3; do
  command -v "$tool" >/dev/null || { echo "$0: $tool is missing" >&2; exit 2; }
done

work=$(mktemp -d "$out/vm.XXXXXX")
qemu_pid=
started=$SECONDS

stop_vm() {
  if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
    kill "$qemu_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$qemu_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$qemu_pid" 2>/dev/null
  fi
  [[ -n $qemu_pid ]] && wait "$qemu_pid" 2>/dev/null
  qemu_pid=
}
cleanup() {
  stop_vm
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# KVM works when the image's kernel, booted on it, prints its banner
# within 20 s. (On some nested hosts QEMU starts on /dev/kvm but the guest
# kernel never gets past its decompressor.)
kvm_works() {
  [[ -w /dev/kvm ]] || return 1
  timeout 20 qemu-system-x86_64 -machine "q35,accel=kvm" -cpu qemu64 -m 512 \
    -display none -nodefaults -no-user-config -serial "file:$work/kvm-probe.log" \
    -kernel "$out/vmlinuz" -append "console=ttyS0 panic=-1" -no-reboot \
    >/dev/null 2>&1 &
  local pid=$! t0=$SECONDS
  while ((SECONDS - t0 < 20)) && kill -0 "$pid" 2>/dev/null; do
    grep -q "Linux version" "$work/kvm-probe.log" 2>/dev/null && break
    sleep 0.2
  done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  grep -q "Linux version" "$work/kvm-probe.log" 2>/dev/null
}
if kvm_works; then
  accel=(-machine "q35,accel=kvm" -cpu qemu64)
  boot_timeout=${ALLOX_BOOT_TIMEOUT:-120}
  echo "vm: KVM"
else
  # One host thread for both vCPUs. With a thread per vCPU, QEMU left the
  # guest's live patching of its own code incoherent across them: while
  # allox-guest-bootstrap attached its tracepoint programs, a vCPU hit the
  # int3 of a jump label the kernel had already patched back, in
  # syscall_trace_enter. 6.12 oopsed so in two boots of fourteen, and 6.1
  # stalled so in the second boot of a fresh-clone run; with one thread
  # 6.12 did not in twenty boots.
  tcg_thread=${ALLOX_TCG_THREAD:-single}
  accel=(-machine q35 -accel "tcg,thread=$tcg_thread" -cpu qemu64)
  boot_timeout=${ALLOX_BOOT_TIMEOUT:-300}
  echo "vm: no usable /dev/kvm, TCG (slow, thread=$tcg_thread)"
fi

port=${ALLOX_TEST_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
base=http://127.0.0.1:$port
qemu-img create -q -f raw "$work/data.img" 4G

# boot N: starts the VM in the background, console in $work/console-N.log.
boot() {
  local n=$1
  console=$work/console-$n.log
  qemu-system-x86_64 "${accel[@]}" -m "${ALLOX_VM_MEMORY:-1536}" -smp 2 -no-user-config -nodefaults \
    -display none -serial "file:$console" \
    -monitor "unix:$work/monitor.sock,server=on,wait=off" \
    -kernel "$out/vmlinuz" -initrd "$out/initrd.img" \
    -append "root=/dev/vda1 rw console=ttyS0 panic=-1 allox.token=$token allox.data=/dev/disk/by-id/virtio-allox-data" \
    -drive "file=$out/allox-guest.raw,format=raw,if=none,id=root,snapshot=on" \
    -device virtio-blk-pci,drive=root \
    -drive "file=$work/data.img,format=raw,if=none,id=data" \
    -device virtio-blk-pci,drive=data,serial=allox-data \
    -netdev "user,id=net0,hostfwd=tcp:127.0.0.1:$port-:8092" \
    -device virtio-net-pci,netdev=net0 \
    -device virtio-rng-pci \
    -no-reboot &
  qemu_pid=$!
}

wait_health() {
  local t0=$SECONDS
  while ((SECONDS - t0 < boot_timeout)); do
    kill -0 "$qemu_pid" 2>/dev/null || { echo "vm: QEMU exited"; return 1; }
    if [[ $(curl -s -m 2 "$base/health" 2>/dev/null | jq -r .status 2>/dev/null) == healthy ]]; then
      echo "vm: /health after $((SECONDS - t0)) s"
      return 0
    fi
    sleep 0.5
  done
  echo "vm: no /health after $boot_timeout s"
  return 1
}

# power_off: ACPI power button, then wait for QEMU to exit.
power_off() {
  python3 - "$work/monitor.sock" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"system_powerdown\n")
time.sleep(0.5)
s.close()
EOF
  local t0=$SECONDS
  while kill -0 "$qemu_pid" 2>/dev/null; do
    ((SECONDS - t0 < 90)) || { echo "vm: no power-off after 90 s"; return 1; }
    sleep 0.5
  done
  wait "$qemu_pid" 2>/dev/null
  qemu_pid=
}

