#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checkpoint and rollback benchmarks (docs/benchmarks.md, "Checkpoints").

Against the release daemon on a fresh loop-backed store, side by side with
`btrfs subvolume snapshot -r` run from the CLI on the same data:
  - checkpoint.create and session.rollback with current/ holding 0, 1,000,
    10,000 and 100,000 files, and with 20 MiB of freshly written, unsynced
    data before each checkpoint;
  - checkpoint.list and rollback with 10 and with 1,000 checkpoints;
  - checkpoint.diff between two checkpoints of a 100,000-file tree that
    differ in 10 files, next to a full walk of both trees.
Usage (root): bench/checkpoints.py [build-dir]   (default build/release)
BENCH_SAMPLES=N sets the samples per cell (BENCH_DIRTY_SAMPLES for the
20 MiB section, default 30); BENCH_ONLY=dirty (a comma-separated list of
sizes, dirty, many, diff) runs only those sections.
"""
import json, os, subprocess, sys, time

from benchlib import Daemon, cell, interleaved, p50_p99, populate

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
bench_bin = os.path.join(build, "bin", "allox-bench")
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "50"))
DIRTY_SAMPLES = int(os.environ.get("BENCH_DIRTY_SAMPLES", "30"))
SECTIONS = ("sizes", "dirty", "many", "diff")
ONLY = [x for x in os.environ.get("BENCH_ONLY", "").split(",") if x]
if any(x not in SECTIONS for x in ONLY):
    sys.exit(f"BENCH_ONLY: sections are {', '.join(SECTIONS)}")
want = lambda section: not ONLY or section in ONLY

daemon = Daemon(build, "16G")
rpc, root = daemon.rpc, daemon.root


def timed(fn, n=SAMPLES, warmup=3):
    # The first Btrfs transaction after an idle moment costs tens of ms on
    # this VM for the CLI as much as for the daemon: warm both up alike.
    for i in range(warmup):
        fn(n + i)
    xs = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        xs.append((time.perf_counter() - t) * 1000)
    return p50_p99(xs)


def settle():
    """Waits for the work earlier steps left behind: the daemon's idle
    work (replaced trees deleted, rows synced), write-back, and the Btrfs
    cleaner reclaiming deleted trees, so no measurement pays for another."""
    time.sleep(2)
    os.sync()
    subprocess.run(["btrfs", "subvolume", "sync", root], check=True,
                   stdout=subprocess.DEVNULL)
    time.sleep(1)


try:
    daemon.wait_ready()
    cli_dir = os.path.join(root, "cli-baseline")
    os.makedirs(cli_dir)
    current = lambda s: os.path.join(
        root, "agents", "bench", "workspace", "sessions", s, "current")

    def cli_snapshot(s, tag):
        def run(i):
            subprocess.run(["btrfs", "subvolume", "snapshot", "-r", current(s),
                            os.path.join(cli_dir, f"{s}-{tag}-{i}")],
                           stdout=subprocess.DEVNULL, check=True)
        return run

    print(f"## Run {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, "
          f"{SAMPLES} samples per cell, times in ms (p50 / p99)\n")
    if want("sizes"):
        print("### checkpoint.create and session.rollback by tree size\n")
        print("| files in current/ | checkpoint.create (RPC) | "
              "`btrfs subvolume snapshot -r` (CLI) | session.rollback (RPC) |")
        print("|---|---|---|---|")
        # All sizes exist side by side and are measured in the same rounds, so
        # they differ only in their file count, not in the file system's history.
        sizes = (0, 1000, 10000, 100000)
        for files in sizes:
            s = f"s{files}"
            rpc("session.create", agent_id="bench", session_id=s)
            populate(current(s), files)
        settle()

        def create_on(s):
            return lambda i: rpc("checkpoint.create", agent_id="bench",
                                 session_id=s)

        def rollback_on(s):
            return lambda i: rpc("session.rollback", agent_id="bench",
                                 session_id=s, checkpoint_id="AB"[i % 2])

        fns = {}
        for files in sizes:
            fns[("create", files)] = create_on(f"s{files}")
            fns[("cli", files)] = cli_snapshot(f"s{files}", "plain")
        stats = interleaved(fns, SAMPLES)
        for files in sizes:
            s = f"s{files}"
            rpc("checkpoint.create", agent_id="bench", session_id=s,
                checkpoint_id="A")
            with open(os.path.join(current(s), "marker"), "w") as f:
                f.write("b")
            rpc("checkpoint.create", agent_id="bench", session_id=s,
                checkpoint_id="B")
        stats.update(interleaved({("rollback", files): rollback_on(f"s{files}")
                                  for files in sizes}, SAMPLES, warmup=4))
        results = {}
        for files in sizes:
            create, cli, rollback = (stats[(what, files)]
                                     for what in ("create", "cli", "rollback"))
            results[files] = (create, cli, rollback)
            print(f"| {files:,} | {cell(*create)} | {cell(*cli)} | "
                  f"{cell(*rollback)} |")
        c0, c100k = results[0][0][0], results[100000][0][0]
        print(f"\nFlatness: p50 at 100,000 files / p50 empty = "
              f"{c100k / c0:.2f}. p50 RPC / CLI at 100,000 files = "
              f"{c100k / results[100000][1][0]:.2f}.\n")

    if want("dirty"):
        print("### 20 MiB of freshly written, unsynced data before each "
              "checkpoint\n")
        s = "dirty"
        rpc("session.create", agent_id="bench", session_id=s)
        settle()
        blob = os.urandom(20 << 20)
        blob_path = os.path.join(current(s), "blob")

        def rewrite(i):
            # Truncating a file with data makes Btrfs start writing the new
            # data out when the file is closed, before the snapshot asks.
            with open(blob_path, "wb") as f:
                f.write(blob[i:] + blob[:i])

        def new_file(i):
            # A new inode: nothing is written out until the snapshot.
            if os.path.exists(blob_path):
                os.unlink(blob_path)
            rewrite(i)

        patterns = (("rewrite", "rewritten in place (`O_TRUNC`)", rewrite),
                    ("new", "written to a new file", new_file))
        fns, before = {}, {}
        for tag, _, prepare in patterns:
            fns[("rpc", tag)] = lambda i: rpc(
                "checkpoint.create", agent_id="bench", session_id=s)
            fns[("cli", tag)] = cli_snapshot(s, f"dirty-{tag}")
            before[("rpc", tag)] = before[("cli", tag)] = prepare
        dirty_rounds = {}
        dirty_stats = interleaved(fns, n=DIRTY_SAMPLES, warmup=1,
                                  before=before, rounds=dirty_rounds)
        # The disk's speed drifts between two regimes during this section, so
        # the medians of the two columns can land in different regimes; the
        # ratio within each round (adjacent samples) is the steadier measure.
        print(f"| the 20 MiB | checkpoint.create (RPC) | CLI snapshot | "
              f"median of per-round ratios RPC / CLI |\n|---|---|---|---|")
        for tag, label, _ in patterns:
            ratios = sorted(r / c for r, c in zip(dirty_rounds[("rpc", tag)],
                                                  dirty_rounds[("cli", tag)]))
            print(f"| {label} | {cell(*dirty_stats[('rpc', tag)])} | "
                  f"{cell(*dirty_stats[('cli', tag)])} | "
                  f"{ratios[len(ratios) // 2]:.2f} |")
        print(f"\n({DIRTY_SAMPLES} samples per cell, p50 / max.)\n")

    if want("many"):
        print("### 10 vs 1,000 checkpoints in one session\n")
        s = "many"
        rpc("session.create", agent_id="bench", session_id=s)
        for i in range(10):
            rpc("checkpoint.create", agent_id="bench", session_id=s,
                checkpoint_id=f"m{i:04d}")
        def page(i):
            rpc("checkpoint.list", agent_id="bench", session_id=s, limit=10,
                cursor="m0000")

        def measure(count):
            """(full list, rollback between m0000 and the middle, page)."""
            middle = count // 2
            return (timed(lambda i: rpc("checkpoint.list", agent_id="bench",
                                        session_id=s)),
                    timed(lambda i: rpc(
                        "session.rollback", agent_id="bench", session_id=s,
                        checkpoint_id=f"m{(i % 2) * middle:04d}")),
                    timed(page))

        at10 = measure(10)
        for i in range(10, 1000):
            rpc("checkpoint.create", agent_id="bench", session_id=s,
                checkpoint_id=f"m{i:04d}")
        at1000 = measure(1000)
        print("| action | 10 checkpoints | 1,000 checkpoints | ratio (p50) |")
        print("|---|---|---|---|")
        for name, a, b in (("checkpoint.list (all records)", at10[0], at1000[0]),
                           ("checkpoint.list (limit 10)", at10[2], at1000[2]),
                           ("session.rollback", at10[1], at1000[1])):
            print(f"| {name} | {cell(*a)} | {cell(*b)} | {b[0] / a[0]:.2f} |")
        print()

    if want("diff"):
        print("### checkpoint.diff on 100,000 files, 10 changed\n")
        s = "s100000"
        if not want("sizes"):
            rpc("session.create", agent_id="bench", session_id=s)
            populate(current(s), 100000)
        rpc("checkpoint.create", agent_id="bench", session_id=s,
            checkpoint_id="D1")
        for i in range(10):
            with open(os.path.join(current(s), "tree", f"d{i * 9}",
                                   f"f{i * 7}"), "w") as f:
                f.write("changed")
        rpc("checkpoint.create", agent_id="bench", session_id=s,
            checkpoint_id="D2")
        diff = timed(lambda i: rpc("checkpoint.diff", agent_id="bench",
                                   session_id=s, **{"from": "D1", "to": "D2"}),
                     n=10, warmup=1)
        res = rpc("checkpoint.diff", agent_id="bench", session_id=s,
                  **{"from": "D1", "to": "D2"})
        cps = os.path.join(root, "agents", "bench", "workspace", "sessions", s,
                           "checkpoints")
        out = subprocess.run([bench_bin, "treediff", "--from", f"{cps}/D1",
                              "--to", f"{cps}/D2", "--ancestor", f"{cps}/D1",
                              "--count", "5"], check=True, capture_output=True,
                             text=True).stdout.splitlines()
        gen, walk = (json.loads(line) for line in out)
        print("| method | changes | directories listed | p50 | max |")
        print("|---|---|---|---|---|")
        print(f"| checkpoint.diff over RPC ({res['method']}) | "
              f"{sum(res['counts'].values())} | {res['stats']['listed_dirs']} | "
              f"{diff[0]:.2f} ms | {diff[1]:.2f} ms |")
        for x in (gen, walk):
            print(f"| {x['what']} (in-process) | {x['changes']} | "
                  f"{x['listed_dirs']} | {x['p50_us'] / 1000:.2f} ms | "
                  f"{x['max_us'] / 1000:.2f} ms |")
        print(f"\nWalk / generation search: "
              f"{walk['p50_us'] / gen['p50_us']:.0f}x.")
finally:
    daemon.stop()
