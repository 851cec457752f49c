#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turn lifecycle benchmark (docs/benchmarks.md, "Turns").

Against the daemon on a fresh loop-backed store: `turn.end` over RPC until
its checkpoint is committed (the reply comes after the snapshot), with
current/ holding 0 and 10,000 files, side by side with a plain
checkpoint.create, with `btrfs subvolume snapshot -r` run from the CLI and
with the snapshot ioctl itself (no process started), in interleaved rounds.
Each cell snapshots its own session's tree, all four trees alike: on this
kernel a snapshot of a tree whose root has hundreds of children costs more
with every snapshot taken of that tree before (docs/benchmarks.md, "Turns"),
so cells sharing one tree would charge each other. Target: p99 <= 15 ms at
10,000 files.

Then over the in-guest event endpoint: a client inside a session's
sandbox sends turn.end on /run/allox/events.sock and times each reply, in
blocks of BLOCK samples alternating with blocks of turn.end over RPC sent
to another session while a run of that session is alive (both are then
live checkpoints: the session's runs, the endpoint client among them, are
frozen for the snapshot). These two have trees of their own too, so they
take the same number of snapshots of a tree as the cells above.
Usage (root): bench/turns.py [build-dir]   (default build/release)
BENCH_SAMPLES=N sets the samples per cell (default 200).
BENCH_KEEP=N runs with retention, as a long-lived session would: policy
keep_auto=N for the turn checkpoints, and the checkpoint.create, CLI and
ioctl cells delete (untimed, before their next sample) all but their last
N. Without it (0, the default) every checkpoint stays. Either way each
new snapshot of the 10,000-file tree costs the kernel more than the one
before (deleted snapshots release their share only when the cleaner gets
to them, within about 30 s).
"""
import fcntl, os, struct, subprocess, sys, time

from benchlib import Daemon, cell, interleaved, p50_p99, populate

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "200"))
KEEP = int(os.environ.get("BENCH_KEEP", "0"))
BLOCK = 10

# Inside the sandbox: argv[1] turn.end calls over the endpoint, one
# connection each (as allox-turn does), times in ms to argv[2].
CLIENT = r"""
import json, os, socket, sys, time
n, out, tag = int(sys.argv[1]), sys.argv[2], sys.argv[3]
times = []
for i in range(n):
    line = json.dumps({"action": "turn.end",
                       "params": {"turn_id": f"e{tag}-{i}"}}).encode() + b"\n"
    t = time.perf_counter()
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ["ALLOX_EVENTS_SOCKET"])
    s.sendall(line)
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    times.append((time.perf_counter() - t) * 1000)
    r = json.loads(data)
    if not r.get("ok") or not r["result"].get("created"):
        sys.exit(f"turn.end over the endpoint: {r}")
open(out, "w").write("\n".join(f"{x:.4f}" for x in times))
"""



def wait_run(run):
    row = run
    while row["state"] in ("starting", "running"):
        row = rpc("process.wait", agent_id="bench",
                  session_id=row["session_id"], run_id=row["run_id"],
                  timeout_ms=60000)
    return row


def endpoint_rounds(s, live, current):
    """Blocks of turn.end over the endpoint (from session s's sandbox) and
    over RPC to session `live` with a run of it alive, alternating; returns
    (endpoint, rpc) samples."""
    over_endpoint, over_rpc = [], []
    for block in range(max(1, SAMPLES // BLOCK)):
        name = f".bench-endpoint-{block}"
        run = rpc("process.start", agent_id="bench", session_id=s,
                  argv=["python3", "-c", CLIENT, str(BLOCK),
                        f"/workspace/{name}", f"{block}-{time.monotonic_ns()}"])
        row = wait_run(run)
        if row["state"] != "completed" or row.get("root_exit_code") != 0:
            raise RuntimeError(f"endpoint client: {row}")
        path = os.path.join(current, name)
        over_endpoint += [float(x) for x in open(path).read().split()]
        os.unlink(path)
        sleeper = rpc("process.start", agent_id="bench", session_id=live,
                      argv=["sleep", "600"])
        time.sleep(0.05)
        for i in range(BLOCK):
            t = time.perf_counter()
            r = rpc("turn.end", agent_id="bench", session_id=live,
                    turn_id=f"r{block}-{i}-{time.monotonic_ns()}")
            over_rpc.append((time.perf_counter() - t) * 1000)
            if not r.get("created"):
                raise RuntimeError(f"turn.end: {r}")
        rpc("process.stop", agent_id="bench", session_id=live,
            run_id=sleeper["run_id"])
        wait_run(sleeper)
    return over_endpoint, over_rpc


daemon = Daemon(build, "8G", prefix="allox-bench-turns-", execution=True)
rpc, root = daemon.rpc, daemon.root

try:
    daemon.wait_ready()
    cli_dir = os.path.join(root, "cli-baseline")
    os.makedirs(cli_dir)
    current = lambda s: os.path.join(
        root, "agents", "bench", "workspace", "sessions", s, "current")
    sizes = (0, 10000)
    cells = ("turn", "create", "cli", "ioctl")
    for files in sizes:
        for what in cells + ("endpoint", "live"):
            s = f"{what}{files}"
            rpc("session.create", agent_id="bench", session_id=s)
            populate(current(s), files)
    rpc("policy.set", agent_id="bench", auto_checkpoint_turns=True,
        **({"keep_auto": KEEP} if KEEP else {}))
    # Untimed, in the two sessions that run processes: a first run, which
    # hands the tree populated here as root to the sandbox user (a chown
    # of every file), and then three turn ends (the warm-up samples the
    # cells above take too), so the first live checkpoint does not carry
    # 10,000 changed inodes.
    for files in sizes:
        for what in ("endpoint", "live"):
            s = f"{what}{files}"
            wait_run(rpc("process.start", agent_id="bench", session_id=s,
                         argv=["true"]))
            for i in range(3):
                rpc("turn.end", agent_id="bench", session_id=s,
                    turn_id=f"warm{i}")
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

    made = {}  # cell -> what it made, oldest first (for BENCH_KEEP)

    def create(s):
        def run(i):
            r = rpc("checkpoint.create", agent_id="bench", session_id=s)
            made.setdefault(("create", s), []).append(r["checkpoint_id"])
        return run

    def cli(s):
        def run(i):
            path = os.path.join(cli_dir, f"{s}-{i}-{time.monotonic_ns()}")
            subprocess.run(["btrfs", "subvolume", "snapshot", "-r", current(s),
                            path], stdout=subprocess.DEVNULL, check=True)
            made.setdefault(("cli", s), []).append(path)
        return run

    def ioctl(s):
        """BTRFS_IOC_SNAP_CREATE_V2, read-only: the kernel's own cost."""
        def run(i):
            name = f"{s}-{i}-{time.monotonic_ns()}"
            src = os.open(current(s), os.O_RDONLY | os.O_DIRECTORY)
            dst = os.open(cli_dir, os.O_RDONLY | os.O_DIRECTORY)
            try:
                args = bytearray(struct.pack("qQQ32s4040s", src, 0, 1 << 1,
                                             b"", name.encode()))
                fcntl.ioctl(dst, 0x50009417, args, True)
            finally:
                os.close(src)
                os.close(dst)
            made.setdefault(("ioctl", s), []).append(
                os.path.join(cli_dir, name))
        return run

    def trim(what, s):
        """Untimed, before a sample: all but the last KEEP of a cell go."""
        def run(i):
            old = made.get((what, s), [])
            while KEEP and len(old) > KEEP:
                victim = old.pop(0)
                if what in ("cli", "ioctl"):
                    subprocess.run(["btrfs", "subvolume", "delete", victim],
                                   stdout=subprocess.DEVNULL, check=True)
                else:
                    rpc("checkpoint.delete", agent_id="bench", session_id=s,
                        checkpoint_id=victim)
        return run

    fns, before = {}, {}
    for files in sizes:
        fns[("turn", files)] = turn_end(f"turn{files}")
        fns[("create", files)] = create(f"create{files}")
        fns[("cli", files)] = cli(f"cli{files}")
        fns[("ioctl", files)] = ioctl(f"ioctl{files}")
        before[("turn", files)] = lambda i: None
        for what in ("create", "cli", "ioctl"):
            before[(what, files)] = trim(what, f"{what}{files}")
    stats = interleaved(fns, SAMPLES, before=before)
    print(f"## Run {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, "
          f"{SAMPLES} samples per cell, times in ms (p50 / p99), "
          + (f"keep_auto {KEEP} (and the last {KEEP} of each other cell)\n"
             if KEEP else "every checkpoint kept\n"))
    print("| files in current/ | turn.end -> checkpoint committed (RPC) | "
          "checkpoint.create (RPC) | `btrfs subvolume snapshot -r` (CLI) | "
          "snapshot ioctl | turn.end / CLI (p50) | turn.end / ioctl (p50) |")
    print("|---|---|---|---|---|---|---|")
    for files in sizes:
        turn, plain, base, raw = (stats[(what, files)] for what in cells)
        print(f"| {files:,} | {cell(*turn)} | {cell(*plain)} | {cell(*base)} "
              f"| {cell(*raw)} | {turn[0] / base[0]:.2f} "
              f"| {turn[0] / raw[0]:.2f} |")
    p99 = stats[("turn", 10000)][1]
    print(f"\nTarget p99 <= 15 ms at 10,000 files: "
          f"{'met' if p99 <= 15 else 'not met'} ({p99:.2f} ms).")

    print(f"\nRuns alive (live checkpoints), blocks of {BLOCK}, "
          f"times in ms (p50 / p99):\n")
    print("| files in current/ | turn.end over the endpoint (from the "
          "sandbox) | turn.end over RPC |")
    print("|---|---|---|")
    for files in sizes:
        s = f"endpoint{files}"
        ep, over_rpc = endpoint_rounds(s, f"live{files}", current(s))
        print(f"| {files:,} | {cell(*p50_p99(ep))} | {cell(*p50_p99(over_rpc))} |")
        if files == 10000:
            live_p99 = (p50_p99(ep)[1], p50_p99(over_rpc)[1])
    print(f"\nTarget p99 <= 15 ms at 10,000 files, runs alive: "
          f"{'met' if max(live_p99) <= 15 else 'not met'} "
          f"(endpoint {live_p99[0]:.2f} ms, RPC {live_p99[1]:.2f} ms).")
finally:
    daemon.stop()
