#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Back-to-back live checkpoints (docs/benchmarks.md, "Live checkpoints").

Against the daemon on a fresh loop-backed store, with a run of the session
alive (`sleep 600`, so every checkpoint freezes the session's cgroup): N
turn.end, N checkpoint.create and N turn.message (no checkpoint: the RPC
and catalog cost alone) in batches, then the same with no run. Each call
follows the previous one at once, which is what an agent framework ending
turns quickly does, and what the kernel's rate limit on cgroup.events
notifications (one per 10 ms per file) bites on.
Usage (root): bench/live_checkpoints.py [build-dir]  (default build/release)
BENCH_SAMPLES=N per batch (default 20), BENCH_BATCHES=N (default 3).
"""
import os, sys, time

from benchlib import Daemon, cell, p50_p99

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "20"))
BATCHES = int(os.environ.get("BENCH_BATCHES", "3"))



d = Daemon(build, "4G", prefix="allox-bench-live-", execution=True)
try:
    d.wait_ready()
    d.rpc("session.create", agent_id="a", session_id="s")
    d.rpc("policy.set", agent_id="a", auto_checkpoint_turns=True)

    def batch(what):
        xs = []
        for i in range(SAMPLES):
            t = time.perf_counter()
            if what == "turn.end":
                d.rpc("turn.end", agent_id="a", session_id="s",
                      turn_id=f"t{time.monotonic_ns()}")
            elif what == "turn.message":
                d.rpc("turn.message", agent_id="a", session_id="s",
                      message="m")
            else:
                d.rpc("checkpoint.create", agent_id="a", session_id="s")
            xs.append((time.perf_counter() - t) * 1000)
        return xs

    whats = ("turn.end", "checkpoint.create", "turn.message")
    live = {w: [] for w in whats}
    idle = {w: [] for w in whats}
    run = d.rpc("process.start", agent_id="a", session_id="s",
                argv=["sleep", "600"])
    time.sleep(0.2)
    for _ in range(BATCHES):
        for w in whats:
            live[w] += batch(w)
    d.rpc("process.stop", agent_id="a", session_id="s", run_id=run["run_id"])
    time.sleep(0.5)
    for _ in range(BATCHES):
        for w in whats:
            idle[w] += batch(w)
    print(f"## Run {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, "
          f"{BATCHES} batches of {SAMPLES}, times in ms (p50 / p99)\n")
    print("| call | a run alive (live checkpoint) | no run |")
    print("|---|---|---|")
    for w in whats:
        print(f"| {w} | {cell(*p50_p99(live[w]))} | {cell(*p50_p99(idle[w]))} |")
finally:
    d.stop()
