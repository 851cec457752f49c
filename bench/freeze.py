#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Live checkpoints (docs/benchmarks.md, "Live checkpoints").

A run inside a session ticks every 0.5 ms for the whole benchmark and
records every gap between two ticks. Meanwhile checkpoints of the session
are taken (its cgroup frozen for each snapshot). Reported:
  - the pause the running process saw: the longest gap during each
    checkpoint, against the longest gap in windows of the same length
    without one (the machine's own scheduling noise);
  - checkpoint.create of the live session against the same session idle.
Usage (root): bench/freeze.py [build-dir]   (default build/release)
"""
import os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import Daemon, cell, p50_p99  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "100"))

TICKER = r"""
import time, sys
end = time.monotonic_ns() + int(float(sys.argv[1]) * 1e9)
last = time.monotonic_ns()
gaps = []
while last < end:
    time.sleep(0.0005)
    now = time.monotonic_ns()
    if now - last > 1_000_000:
        gaps.append((last, now))
    last = now
with open('/workspace/gaps.txt', 'w') as f:
    for a, b in gaps:
        f.write(f"{a} {b}\n")
"""



def longest_gap(gaps, a, b):
    """The longest gap overlapping [a, b] (ns), in ms; the tick itself
    (0.5 ms) when there was none."""
    worst = 0
    for g0, g1 in gaps:
        if g1 >= a and g0 <= b:
            worst = max(worst, g1 - g0)
    return worst / 1e6 if worst else 0.5


def main():
    d = Daemon(build, "4G", execution=True)
    try:
        d.wait_ready()
        d.rpc("session.create", agent_id="a", session_id="s")
        # Idle first: the same checkpoints without a run.
        idle = []
        for i in range(SAMPLES):
            t = time.perf_counter()
            d.rpc("checkpoint.create", agent_id="a", session_id="s")
            idle.append((time.perf_counter() - t) * 1000)
        seconds = SAMPLES * 0.06 + 2
        run = d.rpc("process.start", agent_id="a", session_id="s",
                    argv=["python3", "-c", TICKER, str(seconds)])
        time.sleep(0.5)
        live, windows = [], []
        for i in range(SAMPLES):
            a = time.monotonic_ns()
            t = time.perf_counter()
            d.rpc("checkpoint.create", agent_id="a", session_id="s")
            live.append((time.perf_counter() - t) * 1000)
            b = time.monotonic_ns()
            windows.append((a, b))
            time.sleep(0.03)
        row = run
        while row["state"] in ("starting", "running"):
            row = d.rpc("process.wait", agent_id="a", session_id="s",
                        run_id=run["run_id"], timeout_ms=60000)
        if row["state"] != "completed":
            raise RuntimeError(f"the ticker ended {row['state']}")
        gaps = []
        current = os.path.join(d.root, "agents", "a", "workspace", "sessions",
                               "s", "current")
        for line in open(os.path.join(current, "gaps.txt")):
            g0, g1 = line.split()
            gaps.append((int(g0), int(g1)))
        paused = [longest_gap(gaps, a, b) for a, b in windows]
        # Quiet windows of the same lengths, half-way between checkpoints.
        quiet = []
        for (a, b), (na, _) in zip(windows, windows[1:]):
            mid = (b + na) // 2
            half = (b - a) // 2
            quiet.append(longest_gap(gaps, mid - half, mid + half))
        print(f"## Run {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, "
              f"{SAMPLES} checkpoints, times in ms (p50 / p99)\n")
        print("| what | p50 / p99 |\n|---|---|")
        print(f"| longest pause of a running process during a live "
              f"checkpoint | {cell(*p50_p99(paused))} |")
        print(f"| longest pause in as long a window without one | "
              f"{cell(*p50_p99(quiet))} |")
        print(f"| checkpoint.create, runs live (frozen for the snapshot) | "
              f"{cell(*p50_p99(live))} |")
        print(f"| checkpoint.create, no run | {cell(*p50_p99(idle))} |")
    finally:
        d.stop()


main()
