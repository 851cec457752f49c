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
import http.client, json, os, random, shutil, signal, subprocess, sys
import tempfile, time

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
daemon_bin = os.path.join(build, "guest", "allox-workspace-daemon")
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "200"))

work = tempfile.mkdtemp(prefix="allox-bench-turns-")
root = os.path.join(work, "store")
port = random.randint(20000, 40000)
proc = subprocess.Popen([daemon_bin, "--root", root, "--loop-image",
                         os.path.join(work, "store.img"), "--loop-size", "8G",
                         "--listen", f"127.0.0.1:{port}"],
                        stdout=subprocess.DEVNULL,
                        stderr=open(os.path.join(work, "daemon.log"), "w"))
conn = None


def rpc(action, **params):
    global conn
    body = json.dumps({"action": action, "params": params})
    for _ in range(2):
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port)
            conn.request("POST", "/v1/rpc", body)
            r = json.loads(conn.getresponse().read())
            if not r.get("ok"):
                raise RuntimeError(f"{action}: {r}")
            return r["result"]
        except (ConnectionError, http.client.HTTPException):
            conn = None
    raise RuntimeError("daemon unreachable")


def interleaved(fns, n=SAMPLES, warmup=3):
    """One sample of each operation per round, starting each round one
    place further along, so drift weighs on all alike. name -> (p50, p99)."""
    names = list(fns)
    for i in range(warmup):
        for name in names:
            fns[name](n + i)
    samples = {name: [] for name in names}
    for i in range(n):
        for k in range(len(names)):
            name = names[(i + k) % len(names)]
            t = time.perf_counter()
            fns[name](i)
            samples[name].append((time.perf_counter() - t) * 1000)
    stats = {}
    for name, v in samples.items():
        v.sort()
        stats[name] = (v[len(v) // 2], v[min(len(v) - 1, int(len(v) * 0.99))])
    return stats


def cell(p50, p99):
    return f"{p50:.2f} / {p99:.2f}"


def populate(base, files):
    per_dir = 1000
    for i in range(files):
        d = os.path.join(base, "tree", f"d{i // per_dir}")
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i % per_dir}"), "w") as f:
            f.write("x")


try:
    for _ in range(500):
        try:
            rpc("agent.list")
            break
        except Exception:
            time.sleep(0.01)
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
    stats = interleaved(fns)
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
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    subprocess.run(["umount", root], stderr=subprocess.DEVNULL)
    shutil.rmtree(work, ignore_errors=True)
