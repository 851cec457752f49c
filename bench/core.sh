#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Core daemon benchmarks (docs/benchmarks.md, "Core daemon"):
#   1. session.describe throughput and latency with 1, 16 and 64 keep-alive
#      connections (wrk), next to GET /health on the same daemon (the HTTP
#      path without any actor: the raw baseline).
#   2. session.create latency over one connection, next to the same kernel
#      work done directly with libbtrfsutil on the same filesystem.
#   3. 10,000 sessions: idle RSS against an empty daemon, and the time to
#      re-spawn them all at start-up.
# Usage: bench/core.sh [build-dir]   (default build/release; as root)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build/release}
daemon=$build/bin/allox-workspace-daemon
bench=$build/bin/allox-bench
dur=${BENCH_SECONDS:-10}
work=$(mktemp -d /tmp/allox-bench-XXXXXX)
port=$((20000 + RANDOM % 20000))
pid=

stop() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  pid=
}
cleanup() {
  stop || true
  umount "$work/store" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

start() { # image; sets $pid and $start_ms (exec to first /health answer)
  local t0=$(date +%s%N)
  "$daemon" --root "$work/store" --loop-image "$1" --loop-size 8G \
    --listen "127.0.0.1:$port" >>"$work/daemon.log" 2>&1 &
  pid=$!
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.005; done
  start_ms=$((($(date +%s%N) - t0) / 1000000))
}
rpc() { curl -sf -X POST "http://127.0.0.1:$port/v1/rpc" -d "$1" >/dev/null; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }

cat >"$work/describe.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"action":"session.describe","params":{"agent_id":"bench","session_id":"s"}}'
wrk.headers["Content-Type"] = "application/json"
LUA
wrk_row() { # label connections script url
  local threads=$(($2 < 2 ? 1 : 2))
  local out
  out=$(wrk -t"$threads" -c"$2" -d"${dur}s" --latency ${3:+-s "$3"} "$4")
  local rps p50 p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  printf '| %s | %s | %.0f | %s | %s |\n' "$1" "$2" "$rps" "$p50" "$p99"
}

echo "## Run $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores, kernel $(uname -r)"
echo
start "$work/a.img"
rpc '{"action":"session.create","params":{"agent_id":"bench","session_id":"s"}}'
echo "### session.describe over keep-alive connections (${dur}s each, wrk on the same 2 cores)"
echo
echo "| request | connections | requests/s | p50 | p99 |"
echo "|---|---|---|---|---|"
for c in 1 16 64; do
  wrk_row session.describe "$c" "$work/describe.lua" "http://127.0.0.1:$port/v1/rpc"
done
wrk_row "GET /health (baseline)" 16 "" "http://127.0.0.1:$port/health"
echo

echo "### session.create latency (one connection, 2,000 sessions)"
echo
"$bench" create --port "$port" --count 2000 --agents 10 --prefix lat >"$work/create.json"
"$bench" subvolumes --dir "$work/store/raw-baseline" --count 2000 >"$work/raw.json"
python3 - "$work/create.json" "$work/raw.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
print("| what | p50 | p99 | max | per second |")
print("|---|---|---|---|---|")
for name, x in (("session.create over RPC", d), ("raw: subvolume + .allox-tmp + fsync", r)):
    print(f"| {name} | {x['p50_us']/1000:.2f} ms | {x['p99_us']/1000:.2f} ms | {x['max_us']/1000:.2f} ms | {x['per_second']:.0f} |")
print()
print(f"Ratio p50 RPC/raw: {d['p50_us']/r['p50_us']:.2f}; failures: {d['failures']}")
PY
stop
echo

echo "### 10,000 idle sessions"
echo
start "$work/empty.img"
sleep 1
empty_rss=$(rss_kib)
stop
start "$work/big.img"
"$bench" create --port "$port" --count 10000 --connections 8 --agents 100 >"$work/populate.json"
stop
start "$work/big.img"
restart_ms=$start_ms
sleep 1
full_rss=$(rss_kib)
ready_ms=$(grep -o 'store ready in [0-9]* ms' "$work/daemon.log" | tail -1 | grep -o '[0-9]*')
sessions=$(curl -s -X POST "http://127.0.0.1:$port/v1/rpc" -d '{"action":"system.dump"}' |
  grep -o '"kind":"session"' | wc -l)
python3 - "$work/populate.json" "$empty_rss" "$full_rss" "$restart_ms" "$ready_ms" "$sessions" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
empty, full, restart, ready, live = (int(x) for x in sys.argv[2:])
print("| measure | value |")
print("|---|---|")
print(f"| populate: 10,000 session.create on 8 connections | {p['seconds']:.1f} s ({p['per_second']:.0f}/s, p99 {p['p99_us']/1000:.1f} ms, failures {p['failures']}) |")
print(f"| idle RSS, empty daemon | {empty} KiB |")
print(f"| idle RSS, 10,000 sessions (after restart) | {full} KiB |")
print(f"| memory per idle session | {(full - empty) * 1024 / 10000 / 1024:.1f} KiB |")
print(f"| start-up: exec to first /health answer | {restart} ms |")
print(f"| start-up: reconcile + spawn all actors (log) | {ready} ms |")
print(f"| session actors live after restart | {live} |")
PY
