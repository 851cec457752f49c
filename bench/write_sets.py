#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What write provenance costs the daemon's own calls (docs/benchmarks.md,
"Write provenance").

Two daemons side by side on fresh loop-backed stores, both tracking runs
with eBPF: one with --write-provenance on, one off. In rounds, in both,
with the order alternating (benchlib.interleaved):
  - checkpoint.create after a run changed FILES files (untimed): with
    provenance the checkpoint answers once its write set is in the catalog;
  - checkpoint.create after a run that changed nothing (no write set);
  - checkpoint.diff {writers: true} between the last two checkpoints (the
    one with FILES changes), against the same diff without writers.
Usage (root): bench/write_sets.py [build-dir]   (default build/release)
Environment: BENCH_SAMPLES (default 30), BENCH_FILES (default 1000).
"""
import json, os, sys, time

from benchlib import Daemon, cell, interleaved

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "30"))
FILES = int(os.environ.get("BENCH_FILES", "1000"))


def run(d, script):
    row = d.rpc("process.start", agent_id="a", session_id="s",
                argv=["sh", "-c", script])
    while row["state"] in ("starting", "running"):
        row = d.rpc("process.wait", agent_id="a", session_id="s",
                    run_id=row["run_id"], timeout_ms=60000)
    assert row["state"] == "completed", row


daemons = {}
try:
    for mode in ("on", "off"):
        d = Daemon(build, "8G", prefix=f"allox-bench-writes-{mode}-",
                   execution=True,
                   args=["--process-tracking", "ebpf",
                         "--write-provenance", mode])
        d.wait_ready()
        d.rpc("session.create", agent_id="a", session_id="s")
        daemons[mode] = d
    seq = {"n": 0}

    def checkpoint(d):
        seq["n"] += 1
        return d.rpc("checkpoint.create", agent_id="a", session_id="s",
                     checkpoint_id=f"c{seq['n']}")["checkpoint_id"]

    results = {}
    # After FILES changes: each sample rewrites the same FILES files (new
    # inodes each time: `>` truncates, so every file is a change).
    script = (f"cd /workspace && i=0; while [ $i -lt {FILES} ]; do "
              f"echo $RANDOM > f$i; i=$((i+1)); done")
    before = {f"create after {FILES} changes, provenance {m}":
              (lambda i, d=d: run(d, script)) for m, d in daemons.items()}
    fns = {name: (lambda i, d=daemons[name.rsplit(' ', 1)[1]]: checkpoint(d))
           for name in before}
    results.update(interleaved(fns, SAMPLES, before=before))
    quiet = {f"create after no change, provenance {m}":
             (lambda i, d=d: run(d, "true")) for m, d in daemons.items()}
    fns = {name: (lambda i, d=daemons[name.rsplit(' ', 1)[1]]: checkpoint(d))
           for name in quiet}
    results.update(interleaved(fns, SAMPLES, before=quiet))
    # A diff over FILES changes, with and without writers (provenance on).
    d = daemons["on"]
    run(d, script)
    a = checkpoint(d)
    run(d, script)
    b = checkpoint(d)
    diff = lambda writers: (lambda i: d.rpc(
        "checkpoint.diff", agent_id="a", session_id="s", **{"from": a},
        to=b, limit=10000, writers=writers))
    page = diff(True)(0)
    named = sum(1 for c in page["changes"] if c["writers"])
    results.update(interleaved({f"diff of {FILES} changes": diff(False),
                                f"diff of {FILES} changes, writers": diff(True)},
                               SAMPLES))
    print(f"# {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, "
          f"{SAMPLES} samples per cell, p50 / p99 ms; "
          f"{named} of {len(page['changes'])} changes named")
    for name, (p50, p99) in results.items():
        print(f"| {name} | {cell(p50, p99)} |")
    print(json.dumps({k: list(v) for k, v in results.items()}))
finally:
    for d in daemons.values():
        d.stop()
