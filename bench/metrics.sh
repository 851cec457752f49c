#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cost of /metrics (docs/benchmarks.md, "Metrics"): session.describe
# throughput over 16 keep-alive connections without scraping, then while
# GET /metrics is scraped every second, alternating three times each, on
# the same daemon; and the time of one scrape with 1 and 1,000 sessions.
# Usage: bench/metrics.sh [build-dir]   (default build/release; as root)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build/release}
daemon=$build/bin/allox-workspace-daemon
dur=${BENCH_SECONDS:-10}
work=$(mktemp -d /tmp/allox-bench-XXXXXX)
port=$((20000 + RANDOM % 20000))
pid=
scraper=

cleanup() {
  [ -n "$scraper" ] && kill "$scraper" 2>/dev/null || true
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  umount "$work/store" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$daemon" --root "$work/store" --loop-image "$work/a.img" --loop-size 8G \
  --listen "127.0.0.1:$port" >>"$work/daemon.log" 2>&1 &
pid=$!
until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.005; done
rpc() { curl -sf -X POST "http://127.0.0.1:$port/v1/rpc" -d "$1" >/dev/null; }
rpc '{"action":"session.create","params":{"agent_id":"bench","session_id":"s"}}'

cat >"$work/describe.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"action":"session.describe","params":{"agent_id":"bench","session_id":"s"}}'
wrk.headers["Content-Type"] = "application/json"
LUA
rps() {
  wrk -t2 -c16 -d"${dur}s" -s "$work/describe.lua" \
    "http://127.0.0.1:$port/v1/rpc" | awk '/Requests\/sec/ {print $2}'
}
scrape_ms() { # median of 21 scrapes, ms
  for _ in $(seq 21); do
    curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port/metrics"
  done | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[11]*1000}'
}

echo "## Run $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores, ${dur}s per row"
echo
echo "| round | scraping every second | session.describe requests/s |"
echo "|---|---|---|"
for round in 1 2 3; do
  echo "| $round | no | $(rps) |"
  ( while true; do curl -s -o /dev/null "http://127.0.0.1:$port/metrics"; sleep 1; done ) &
  scraper=$!
  echo "| $round | yes | $(rps) |"
  kill "$scraper"; wait "$scraper" 2>/dev/null || true; scraper=
done
echo
one=$(scrape_ms)
for i in $(seq 999); do
  rpc "{\"action\":\"session.create\",\"params\":{\"agent_id\":\"bench\",\"session_id\":\"m$i\"}}"
done
many=$(scrape_ms)
bytes=$(curl -s "http://127.0.0.1:$port/metrics" | wc -c)
echo "| sessions | one scrape (median of 21) | exposition size |"
echo "|---|---|---|"
echo "| 1 | ${one} ms | |"
echo "| 1000 | ${many} ms | ${bytes} bytes |"
