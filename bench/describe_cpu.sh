#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The daemon's CPU time per session.describe (and per GET /health, the HTTP
# path without an actor), for two daemon binaries in alternating rounds.
# CPU per request (utime + stime of the daemon over a 5 s wrk run, divided
# by the requests it answered) moves far less with a noisy host than
# requests/s do, so it compares builds where throughput cannot.
# Usage: bench/describe_cpu.sh BEFORE-DAEMON AFTER-DAEMON [ROUNDS]  (as root)
set -euo pipefail
before=$1
after=$2
rounds=${3:-4}
lua=$(mktemp /tmp/allox-describe-XXXXXX.lua)
cat >"$lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"action":"session.describe","params":{"agent_id":"bench","session_id":"s"}}'
wrk.headers["Content-Type"] = "application/json"
LUA
work=
pid=
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$work" ] && { umount "$work/store" 2>/dev/null || true; rm -rf "$work"; }
  rm -f "$lua"
}
trap cleanup EXIT
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
per_request() { # url [script] -> "requests us-per-request"
  local c0 c1 out n
  c0=$(cpu_ticks "$pid")
  out=$(wrk -t2 -c16 -d5s ${2:+-s "$2"} "$1")
  c1=$(cpu_ticks "$pid")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  python3 -c "print($n, round(($c1 - $c0) / $(getconf CLK_TCK) * 1e6 / $n, 1))"
}
echo "| round | build | describe requests | describe CPU/request (us) | /health requests | /health CPU/request (us) |"
echo "|---|---|---|---|---|---|"
for round in $(seq "$rounds"); do
  for which in before after; do
    daemon=$before
    [ "$which" = after ] && daemon=$after
    work=$(mktemp -d /tmp/allox-bench-XXXXXX)
    port=$((20000 + RANDOM % 20000))
    "$daemon" --root "$work/store" --loop-image "$work/a.img" --loop-size 2G \
      --listen "127.0.0.1:$port" >"$work/log" 2>&1 &
    pid=$!
    until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.01; done
    curl -sf -X POST "http://127.0.0.1:$port/v1/rpc" -d \
      '{"action":"session.create","params":{"agent_id":"bench","session_id":"s"}}' >/dev/null
    read -r dn dc <<<"$(per_request "http://127.0.0.1:$port/v1/rpc" "$lua")"
    read -r hn hc <<<"$(per_request "http://127.0.0.1:$port/health")"
    echo "| $round | $which | $dn | $dc | $hn | $hc |"
    kill -TERM "$pid"
    wait "$pid" || true
    pid=
    umount "$work/store" 2>/dev/null || true
    rm -rf "$work"
    work=
  done
done
