#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# guest/image/boot-test.sh OUT_DIR: boots the image of guest/image/build.sh
# in QEMU and drives Allox OS through a forwarded loopback port.
#
# Boot 1, with a fresh data disk: /health, the token, the reference curl
# flow (session.create, describe, checkpoint.create, session.rollback), a
# sandboxed process.start, a checkpoint and rollback of files a run wrote,
# the data disk formatted, allox-guest-bootstrap's report (when the image
# has the tool), a session with memory.max and pids.max whose memory hog
# ends oom_killed while the session stays usable, noisy neighbours
# (noisy-neighbours.py: a limited session's fork bomb, memory hogs and CPU
# spinners beside a steady session's loop, and a filler at its disk
# share), the store's quotas on and the qgroups of a deleted session swept,
# then an ACPI power-off. Boot 2, same data disk: everything is still
# there. Exit 0 when every step passed. KVM when /dev/kvm works
# (with -cpu qemu64), TCG otherwise. Leaves nothing running.
#
# The VM itself: guest/image/vm.sh (and its ALLOX_* variables).
set -uo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
source "$here/vm.sh"
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS  $*"; }
fail() { failed=$((failed + 1)); echo "FAIL  $*"; }
# check NAME COMMAND...: one step.
check() {
  local name=$1; shift
  if "$@"; then pass "$name"; else fail "$name"; fi
}

# rpc ACTION PARAMS_JSON: prints the response body; the HTTP status in $status.
rpc() {
  local body
  body=$(curl -s -m 60 -w '\n%{http_code}' -H "Authorization: Bearer $token" \
    -X POST "$base/v1/rpc" -d "{\"action\":\"$1\",\"params\":$2}")
  status=${body##*$'\n'}
  response=${body%$'\n'*}
}
ok() { [[ $status == 200 && $(jq -r .ok <<<"$response") == true ]] || { echo "      $response"; return 1; }; }
result() { jq -r ".result$1" <<<"$response"; }

S='"agent_id":"agent-1","session_id":"s1"'
# run ARGV_JSON: process.start, process.wait, process.output; stdout in $run_out.
run() {
  run_out=
  rpc process.start "{$S,\"argv\":$1}"; ok || return 1
  local id; id=$(result .run_id)
  rpc process.wait "{$S,\"run_id\":\"$id\",\"timeout_ms\":60000}"; ok || return 1
  [[ $(result .state) == completed && $(result .root_exit_code) == 0 ]] || { echo "      $response"; return 1; }
  rpc process.output "{$S,\"run_id\":\"$id\"}"; ok || return 1
  run_out=$(result .data)
}

console_has() { grep -q -- "$1" "$console"; }

bootstrap_report() {
  local line
  line=$(grep -a -m1 -o 'allox-guest-bootstrap report: .*' "$console" | sed 's/^allox-guest-bootstrap report: //; s/\r$//')
  [[ -n $line ]] || { echo "      no report on the console"; return 1; }
  jq -e 'type == "object"' <<<"$line" >/dev/null || { echo "      not JSON: $line"; return 1; }
  echo "      $line"
  console_has "allox-guest-bootstrap exit: 0" || { echo "      allox-guest-bootstrap failed"; return 1; }
}

# -- boot 1: fresh data disk ----------------------------------------------
booted=0
boot 1
if wait_health; then
  booted=1
  pass "boot 1: /health"
  check "boot 1: data disk formatted on first boot" console_has "formatting blank"
  if console_has "allox-guest-bootstrap: not installed in this image"; then
    echo "SKIP  boot 1: allox-guest-bootstrap report (the image has no allox-guest-bootstrap)"
  else
    check "boot 1: allox-guest-bootstrap report" bootstrap_report
  fi
  check "token required" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' -X POST $base/v1/rpc -d '{\"action\":\"system.dump\"}') == 401 ]]"
  rpc session.create "{$S}"; check "session.create" ok
  rpc session.describe "{$S}"
  check "session.describe" eval 'ok && [[ $(result .relative_session_workspace) == agents/agent-1/workspace/sessions/s1 ]]'
  rpc process.status "{}"
  check "process.status: sandboxed execution enabled" eval 'ok && [[ $(result .execution_enabled) == true && $(result .isolation) == bubblewrap ]]'
  # Our init as PID 1, becoming the allox-sandbox user (--uid).
  check "process.start: sandboxed run writes the workspace" eval \
    'run "[\"sh\",\"-c\",\"echo v1 > /workspace/file.txt; tr \\\"\\\\0\\\" \\\" \\\" < /proc/1/cmdline; echo; cat /workspace/file.txt\"]" && [[ $(head -n1 <<<"$run_out") == "/run/allox/init --status-fd 3 --uid "*" -- sh -c"* ]] && [[ $(tail -n1 <<<"$run_out") == v1 ]]'
  echo "      run output: $(tr '\n' '|' <<<"$run_out")"
  rpc checkpoint.create "{$S,\"checkpoint_id\":\"cp1\",\"message\":\"v1\"}"
  check "checkpoint.create" eval 'ok && [[ $(result .checkpoint_id) == cp1 ]]'
  check "process.start: the run changes the file" eval 'run "[\"sh\",\"-c\",\"echo v2 > /workspace/file.txt; echo extra > /workspace/new.txt\"]"'
  rpc session.rollback "{$S,\"checkpoint_id\":\"cp1\"}"
  check "session.rollback" eval 'ok && [[ $(result .checkpoint_id) == cp1 ]]'
  check "rollback restored the file" eval 'run "[\"sh\",\"-c\",\"cat /workspace/file.txt; ls /workspace\"]" && [[ $run_out == $'"'"'v1\nfile.txt'"'"' ]]'
  rpc checkpoint.create "{$S,\"checkpoint_id\":\"cp2\"}"; check "checkpoint.create after rollback" ok
  # A session deleted now: its qgroups (its disk group, under simple
  # quotas) are swept once the cleaner dropped its trees, while the noisy
  # neighbours run (checked after them).
  G='"agent_id":"agent-1","session_id":"gone"'
  rpc session.create "{$G}"; check "session.create (a session to delete)" ok
  rpc checkpoint.create "{$G}"; check "checkpoint.create (a session to delete)" ok
  rpc session.delete "{$G}"; check "session.delete" ok
  # Limits, where the guest's controllers reach the sessions' groups: a
  # memory hog past memory.max is killed and its run says so.
  H='"agent_id":"agent-1","session_id":"hog"'
  rpc session.create "{$H}"; check "limits: session.create" ok
  rpc session.configure "{$H,\"limits\":{\"memory.max\":\"64M\",\"pids.max\":\"64\"}}"
  check "limits: memory.max and pids.max taken" eval 'ok && [[ $(result '"'"'.limits["memory.max"]'"'"') == 64M ]]'
  rpc session.describe "{$H}"
  check "limits: session.describe names them" eval 'ok && [[ $(result '"'"'.limits["pids.max"]'"'"') == 64 ]]'
  rpc process.start "{$H,\"argv\":[\"sh\",\"-c\",\"x=a; while :; do x=\$x\$x; done\"]}"
  if ok; then
    hog=$(result .run_id)
    rpc process.wait "{$H,\"run_id\":\"$hog\",\"timeout_ms\":50000}"
    check "limits: the memory hog ends stopped, oom_killed" eval 'ok && [[ $(result .state) == stopped && $(result .stop_reason) == oom_killed ]]'
    echo "      hog: $(jq -c '.result | {state, stop_reason, root_exit_code, error}' <<<"$response")"
  else
    fail "limits: the memory hog starts"
  fi
  check "limits: the session stays usable" eval 'S=$H run "[\"true\"]"'
  # One session cannot take the VM from another (its own PASS/FAIL lines).
  check "noisy neighbours" python3 "$here/noisy-neighbours.py" "$base" "$token"
  N='"agent_id":"agent-2","session_id":"steady"'
  rpc checkpoint.list "{$N}"; steady_checkpoints=$(result .checkpoint_ids)
  # The store's quotas, in the mode of the guest's kernel. Simple quotas
  # (6.7 and later: ALLOX_GUEST_KERNEL=backports): a session's share holds
  # its checkpoints (noisy-neighbours.py checks it), and the daemon's sweep
  # removed the deleted session's empty disk group. Full quotas (the
  # image's 6.1) keep the qgroup of a deleted tree, and the sweep removed
  # those of the deleted session and of the trees s1's rollback replaced.
  # Either way it says so in the log (daemon/qgroup_sweep.hpp).
  rpc process.status "{}"; quota_mode=$(result .store_quota_mode)
  check "boot 1: the store's quotas are on ($quota_mode)" eval '[[ $quota_mode == simple || $quota_mode == full ]]'
  if [[ $quota_mode == simple ]]; then
    check "boot 1: the deleted session's disk group is swept" console_has "empty disk group(s)"
  else
    check "boot 1: qgroups of deleted trees are swept" console_has "qgroup(s) of deleted trees"
  fi
  # A guest that panicked or rebooted ends QEMU (-no-reboot): its console
  # says why, and goes with the run.
  if ! kill -0 "$qemu_pid" 2>/dev/null; then
    fail "boot 1: QEMU ran to the power-off"
    tail -n 80 "$console"
  fi
  check "boot 1: power off" power_off
else
  fail "boot 1: /health"
  tail -n 40 "$console"
fi
stop_vm

# -- boot 2: the same data disk ---------------------------------------------
if ((booted)); then
  boot 2
  if wait_health; then
    pass "boot 2: /health"
    check "boot 2: data disk kept (not formatted again)" eval 'console_has "found Btrfs" && ! console_has "formatting blank"'
    rpc session.list '{"agent_id":"agent-1"}'
    check "boot 2: sessions kept" eval 'ok && [[ $(result '"'"'.session_ids | join(",")'"'"') == hog,s1 ]]'
    rpc checkpoint.list "{$S}"
    check "boot 2: checkpoints and head kept" eval 'ok && [[ $(result .head) == cp2 && $(result '"'"'.checkpoint_ids | join(",")'"'"') == cp1,cp2 ]]'
    check "boot 2: workspace kept" eval 'run "[\"cat\",\"/workspace/file.txt\"]" && [[ $run_out == v1 ]]'
    rpc process.list "{$S}"
    check "boot 2: earlier runs kept" eval 'ok && (( $(result " | length") >= 4 ))'
    rpc checkpoint.list "{$N}"
    check "boot 2: the steady neighbour's checkpoints kept" eval 'ok && [[ $(result .checkpoint_ids) == "$steady_checkpoints" && $steady_checkpoints != null ]]'
    rpc session.rollback "{$S,\"checkpoint_id\":\"cp1\"}"; check "boot 2: session.rollback" ok
    check "boot 2: power off" power_off
  else
    fail "boot 2: /health"
    tail -n 40 "$console"
  fi
  stop_vm
fi

echo "boot-test: $((SECONDS - started)) s"
echo "$passed passed, $failed failed"
((failed == 0))
