#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the store's Btrfs quotas cost (docs/benchmarks.md, "Store quotas").

Two daemons of the same build, each on a fresh loop-backed store, one with
--store-quotas and its session at disk.max=4G, one without (the quotas'
mode, simple or full, is the kernel's and the build's: the header says): a session
holding 10,000 small files, and 4 MiB of fresh data written before each
sample. Measured in interleaved rounds on both stores:
  - checkpoint.create, session.rollback (to the checkpoint just taken),
    checkpoint.delete (of the previous round's checkpoint);
  - the kernel's own share, `btrfs subvolume snapshot -r` of the same
    current/ from the CLI, and a CLI delete until the cleaner has dropped
    every deleted tree (`btrfs subvolume list -d` empty, polled every
    5 ms): where qgroups account a delete, for the CLI's trees and the
    daemon's alike.
Usage (root): bench/store_quotas.py [build-dir]   (default build/release)
BENCH_SAMPLES=N sets the samples per cell (default 40).
"""
import os, subprocess, sys, time

from benchlib import Daemon, cell, interleaved, populate

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "40"))
FILES = 10000
DIRTY = 4 << 20

daemons = {
    "off": Daemon(build, "8G", prefix="allox-quota-off-", execution=True),
    "on": Daemon(build, "8G", prefix="allox-quota-on-", execution=True,
                 args=["--store-quotas"]),
}


def current(d):
    return os.path.join(d.root, "agents", "bench", "workspace", "sessions",
                        "s", "current")


def settle(d):
    os.sync()
    subprocess.run(["btrfs", "filesystem", "sync", d.root], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["btrfs", "subvolume", "sync", d.root], check=True,
                   stdout=subprocess.DEVNULL, timeout=120)


def write_fresh(d):
    blob = os.urandom(DIRTY)

    def run(i):
        with open(os.path.join(current(d), "fresh"), "wb") as f:
            f.write(blob[i % 4096:] + blob[:i % 4096])
    return run


try:
    for mode, d in daemons.items():
        d.wait_ready()
        d.rpc("session.create", agent_id="bench", session_id="s")
        if mode == "on":
            d.rpc("session.configure", agent_id="bench", session_id="s",
                  limits={"disk.max": "4G"})
        populate(current(d), FILES)
        os.makedirs(os.path.join(d.root, "cli-baseline"))
        settle(d)
    # Builds from before the quota modes had full quotas only.
    quota_mode = daemons["on"].rpc("process.status").get(
        "store_quota_mode", "full")
    print(f"## Run {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, "
          f"{SAMPLES} samples per cell, {FILES:,} files and 4 MiB written "
          f"before each sample, {quota_mode} quotas, times in ms "
          f"(p50 / p99)\n")

    taken = {mode: [] for mode in daemons}

    def create(mode):
        d = daemons[mode]

        def run(i):
            r = d.rpc("checkpoint.create", agent_id="bench", session_id="s")
            taken[mode].append(r["checkpoint_id"])
        return run

    def rollback(mode):
        d = daemons[mode]
        return lambda i: d.rpc("session.rollback", agent_id="bench",
                               session_id="s",
                               checkpoint_id=taken[mode][-1])

    def delete(mode):
        d = daemons[mode]

        def run(i):
            # The one before the head: the head cannot go.
            victim = taken[mode].pop(-2)
            d.rpc("checkpoint.delete", agent_id="bench", session_id="s",
                  checkpoint_id=victim)
        return run

    def cli_snapshot(mode):
        d = daemons[mode]
        return lambda i: subprocess.run(
            ["btrfs", "subvolume", "snapshot", "-r", current(d),
             os.path.join(d.root, "cli-baseline", f"c{i}-{time.time_ns()}")],
            stdout=subprocess.DEVNULL, check=True)

    def cli_sync(mode):
        d = daemons[mode]

        def run(i):
            base = os.path.join(d.root, "cli-baseline")
            names = sorted(os.listdir(base))
            if names:
                subprocess.run(["btrfs", "subvolume", "delete",
                                os.path.join(base, names[0])],
                               stdout=subprocess.DEVNULL, check=True)
            # BTRFS_IOC_SYNC commits and wakes the cleaner, which otherwise
            # waits up to the commit interval (30 s) for the deletes of this
            # one and of the daemon's.
            subprocess.run(["btrfs", "filesystem", "sync", d.root],
                           stdout=subprocess.DEVNULL, check=True)
            # `btrfs subvolume sync` polls once a second: too coarse here.
            end = time.monotonic() + 120
            while subprocess.run(["btrfs", "subvolume", "list", "-d", d.root],
                                 capture_output=True, check=True).stdout:
                if time.monotonic() > end:
                    raise RuntimeError("the cleaner did not finish")
                time.sleep(0.005)
        return run

    fns, before = {}, {}
    for mode in daemons:
        for op, make in (("checkpoint.create", create),
                         ("session.rollback", rollback),
                         ("checkpoint.delete", delete),
                         ("snapshot -r (CLI)", cli_snapshot),
                         ("delete + drop (CLI)", cli_sync)):
            fns[(op, mode)] = make(mode)
            before[(op, mode)] = write_fresh(daemons[mode])
    # The rounds keep the order create, rollback, delete per store: a round
    # starts one place further along, which may put a delete or a rollback
    # first; both need two checkpoints, so two are taken untimed.
    for mode, d in daemons.items():
        for _ in range(2):
            create(mode)(0)
    rounds = {}
    stats = interleaved(fns, SAMPLES, before=before, rounds=rounds)
    print("| operation | quotas off | quotas on, disk.max set | on / off "
          "(p50) |")
    print("|---|---|---|---|")
    for op in ("checkpoint.create", "session.rollback", "checkpoint.delete",
               "snapshot -r (CLI)", "delete + drop (CLI)"):
        off, on = stats[(op, "off")], stats[(op, "on")]
        print(f"| {op} | {cell(*off)} | {cell(*on)} | {on[0] / off[0]:.2f} |")
    # Whether the cost grows as the rounds go (snapshots come and go, the
    # trees' history grows): medians of the first and the last ten rounds.
    med = lambda xs: sorted(xs)[len(xs) // 2]
    print("\n| operation | store | first 10 rounds (p50) | last 10 rounds "
          "(p50) |")
    print("|---|---|---|---|")
    for op in ("checkpoint.create", "snapshot -r (CLI)"):
        for mode in daemons:
            xs = rounds[(op, mode)]
            print(f"| {op} | quotas {mode} | {med(xs[:10]):.2f} | "
                  f"{med(xs[-10:]):.2f} |")
    shown = subprocess.run(["btrfs", "qgroup", "show", daemons["on"].root],
                           capture_output=True, text=True).stdout
    live = subprocess.run(["btrfs", "subvolume", "list", daemons["on"].root],
                          capture_output=True, text=True).stdout
    print(f"\nAt the end, the store with quotas has "
          f"{len(shown.splitlines()) - 2} qgroups and "
          f"{len(live.splitlines())} subvolumes.\n")
finally:
    for d in daemons.values():
        d.stop()
