#!/usr/bin/env python3
"""Turn lifecycle benchmark (docs/benchmarks.md, "Turns").

Against the daemon on a fresh loop-backed store: `turn.end` over RPC until
its checkpoint is committed (the reply comes after the snapshot), with
current/ holding 0 and 10,000 files, side by side with a plain
checkpoint.create and with `btrfs subvolume snapshot -r` run from the CLI on
the same trees, in interleaved rounds. Target: p99 <= 15 ms at 10,000 files.
Usage (root): bench/turns.py [build-dir]   (default build/release)
BENCH_SAMPLES=N sets the samples per cell (default 200).
"""
import os, subprocess, sys, time

from benchlib import Daemon, cell, interleaved, populate

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "200"))

daemon = Daemon(build, "8G", prefix="allox-bench-turns-")
rpc, root = daemon.rpc, daemon.root

try:
    daemon.wait_ready()
    cli_dir = os.path.join(root, "cli-baseline")
    os.makedirs(cli_dir)
    current = lambda s: os.path.join(
        root, "agents", "bench", "workspace", "sessions", s, "current")
    sizes = (0, 10000)
    for files in sizes:
        s = f"s{files}"
        rpc("session.create", agent_id="bench", session_id=s)
        populate(current(s), files)
    rpc("policy.set", agent_id="bench", auto_checkpoint_turns=True)
    os.sync()
    subprocess.run(["btrfs", "filesystem", "sync", root], check=True,
                   stdout=subprocess.DEVNULL)
    time.sleep(2)

    def turn_end(s):
        def run(i):
            r = rpc("turn.end", agent_id="bench", session_id=s,
                    turn_id=f"t{i}-{time.monotonic_ns()}")
            if not r.get("created"):
                raise RuntimeError(f"turn.end: {r}")
        return run

    def create(s):
        return lambda i: rpc("checkpoint.create", agent_id="bench",
                             session_id=s)

    def cli(s):
        def run(i):
            subprocess.run(["btrfs", "subvolume", "snapshot", "-r", current(s),
                            os.path.join(cli_dir, f"{s}-{i}-"
                                         f"{time.monotonic_ns()}")],
                           stdout=subprocess.DEVNULL, check=True)
        return run

    fns = {}
    for files in sizes:
        s = f"s{files}"
        fns[("turn", files)] = turn_end(s)
        fns[("create", files)] = create(s)
        fns[("cli", files)] = cli(s)
    stats = interleaved(fns, SAMPLES)
    print(f"## Run {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, "
          f"{SAMPLES} samples per cell, times in ms (p50 / p99)\n")
    print("| files in current/ | turn.end -> checkpoint committed (RPC) | "
          "checkpoint.create (RPC) | `btrfs subvolume snapshot -r` (CLI) | "
          "turn.end / CLI (p50) |")
    print("|---|---|---|---|---|")
    for files in sizes:
        turn, plain, base = (stats[(what, files)]
                             for what in ("turn", "create", "cli"))
        print(f"| {files:,} | {cell(*turn)} | {cell(*plain)} | {cell(*base)} "
              f"| {turn[0] / base[0]:.2f} |")
    p99 = stats[("turn", 10000)][1]
    print(f"\nTarget p99 <= 15 ms at 10,000 files: "
          f"{'met' if p99 <= 15 else 'not met'} ({p99:.2f} ms).")
finally:
    daemon.stop()
