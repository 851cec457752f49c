#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bulk file transfer and fork benchmarks (docs/benchmarks.md, "Files").

Against the daemon on a fresh loop-backed store, side by side with the raw
tools on the same file system, in the same run:
  - PUT and GET /v1/files/... of one 1 GiB file (curl, and alloxctl
    file upload/download; a GET to /dev/null too, the daemon's side
    without the client's writes) against
    `cp --reflink=never` of the same file (cp on Btrfs would otherwise
    clone the extents and copy nothing), also followed by an fsync, since
    an upload is synced before it is answered;
  - a 20,000-file tree as a tar stream (`tar -c | curl -T -`, and
    `curl | tar -x`) against `tar -c | tar -x`;
  - session.fork from a checkpoint of 0 and of 100,000 files against
    `btrfs subvolume snapshot` of the same checkpoint from the CLI (and
    against the two snapshots a fork makes: current/, answered, and its
    read-only baseline checkpoint, made after the reply); 30 ms untimed
    after every sample let the baseline finish;
  - (part `small`, not in the default) 1 KiB PUTs over one kept-alive
    connection, each durable before it is answered, against the same
    write, fsync, rename and directory fsync done directly on the store,
    one of each in turn: the cost of a transfer's begin, end and audit.
Usage (root): bench/files.py [build-dir]   (default build/release)
BENCH_SAMPLES=N sets the samples of the fork cells (default 30); the
transfers take BENCH_TRANSFERS=N samples each (default 5). BENCH_PARTS
picks parts, comma-separated, of: file, tree, fork (default all three),
small (BENCH_SMALL=N samples, default 500).
BENCH_VERBOSE=1 prints every transfer sample to stderr as it is taken.
"""
import http.client, json, os, random, shutil, signal, subprocess, sys
import tempfile, time

from benchlib import p50_p99

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
daemon_bin = os.path.join(build, "bin", "allox-workspace-daemon")
ctl_bin = os.path.join(build, "bin", "alloxctl")
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "30"))
TRANSFERS = int(os.environ.get("BENCH_TRANSFERS", "5"))
PARTS = os.environ.get("BENCH_PARTS", "file,tree,fork").split(",")
VERBOSE = os.environ.get("BENCH_VERBOSE") == "1"
SMALL = int(os.environ.get("BENCH_SMALL", "500"))
GIB = 1 << 30

work = tempfile.mkdtemp(prefix="allox-bench-")
root = os.path.join(work, "store")
port = random.randint(20000, 40000)
proc = subprocess.Popen([daemon_bin, "--root", root, "--loop-image",
                         os.path.join(work, "store.img"), "--loop-size", "16G",
                         "--listen", f"127.0.0.1:{port}"],
                        stdout=subprocess.DEVNULL,
                        stderr=open(os.path.join(work, "daemon.log"), "w"))
conn = None
url = lambda path: f"http://127.0.0.1:{port}/v1/files/bench/s/{path}"


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


def sh(cmd):
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL)


def seconds(cmd, before=None):
    """Wall time of one shell command, after `before` (untimed: a command,
    or a function of the command's name)."""
    if callable(before):
        before()
    elif before:
        sh(before)
    t = time.perf_counter()
    sh(cmd)
    return time.perf_counter() - t


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def interleaved(cmds, n, before=None):
    """name -> median seconds; one sample of each command per round, so
    drift in the disk weighs on all of them alike. A command may be a
    function of the round; `before` maps names to untimed commands, or is
    a function of (name, round) run before each sample."""
    names = list(cmds)
    samples = {name: [] for name in names}
    for i in range(n):
        for k in range(len(names)):
            name = names[(i + k) % len(names)]
            cmd = cmds[name]
            samples[name].append(seconds(
                cmd(i) if callable(cmd) else cmd,
                (lambda: before(name, i)) if callable(before)
                else before.get(name) if before else None))
            if VERBOSE:
                print(f"{time.strftime('%H:%M:%S')} round {i} {name}: "
                      f"{samples[name][-1]:.2f} s", file=sys.stderr)
    return {name: median(v) for name, v in samples.items()}


def settle():
    os.sync()
    subprocess.run(["btrfs", "subvolume", "sync", root], check=True,
                   stdout=subprocess.DEVNULL)
    time.sleep(1)


def populate(base, files, content=b"x"):
    per_dir = 1000 if files > 20000 else 100
    for i in range(files):
        d = os.path.join(base, f"d{i // per_dir}")
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i % per_dir}"), "wb") as f:
            f.write(content)


try:
    # Formatting and mounting a 16 GiB image can take seconds.
    for _ in range(3000):
        try:
            rpc("agent.list")
            break
        except Exception:
            time.sleep(0.01)
    rpc("session.create", agent_id="bench", session_id="s")
    current = lambda s: os.path.join(
        root, "agents", "bench", "workspace", "sessions", s, "current")
    scratch = os.path.join(root, "scratch")
    os.makedirs(scratch)
    print(f"## Run {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, "
          f"medians of {TRANSFERS} samples (transfers) and {SAMPLES} (fork)\n")
    if "file" in PARTS:
        big = os.path.join(scratch, "big.bin")
        with open(big, "wb") as f:
            for _ in range(GIB >> 24):
                f.write(os.urandom(1 << 24))
        settle()

        print("### One 1 GiB file\n")
        out = os.path.join(scratch, "out.bin")
        sh(f"curl -sSf -T {big} {url('big.bin')}")  # for the first download
        ctl = (f"{ctl_bin} --url http://127.0.0.1:{port} --agent bench "
               f"--session s file")
        names = ("upload", "download", "download to /dev/null",
                 "alloxctl upload", "alloxctl download", "cp", "cp+fsync")
        # What each sample writes is deleted right before the next sample
        # that writes, whichever that is. So every such sample starts with
        # the same memory at hand, the 1 GiB its predecessor just freed, and
        # nothing dirty. Memory freed earlier is not the same: this VM
        # reports free pages to its host (virtio-balloon free page
        # reporting), and each such page costs a fault on the host when it
        # is touched again. Before, cp's output was deleted before each cp
        # while uploads kept theirs, and an upload took 4.65 s where the
        # same upload right after a delete took 3.12 (docs/benchmarks.md).
        wrote = {
            "upload": lambda i: os.path.join(current("s"), f"big{i}.bin"),
            "download": lambda i: out,
            "download to /dev/null": lambda i: None,
            "alloxctl upload": lambda i: os.path.join(current("s"),
                                                      f"ctl{i}.bin"),
            "alloxctl download": lambda i: out,
            "cp": lambda i: out,
            "cp+fsync": lambda i: out,
        }
        previous = []

        def fresh(name, i):
            path = wrote[name](i)
            if path:  # a download to /dev/null frees nothing it needs
                for old in previous:
                    if os.path.exists(old):
                        os.unlink(old)
                previous[:] = [path]
            os.sync()

        t = interleaved({
            "upload": lambda i: f"curl -sSf -T {big} {url(f'big{i}.bin')}",
            "download": f"curl -sSf -o {out} {url('big.bin')}",
            # The daemon's side alone: nothing written by the client.
            "download to /dev/null":
                f"curl -sSf -o /dev/null {url('big.bin')}",
            "alloxctl upload":
                lambda i: f"{ctl} upload {big} --path ctl{i}.bin >/dev/null",
            "alloxctl download":
                f"{ctl} download big.bin --to {out} >/dev/null",
            "cp": f"cp --reflink=never {big} {out}",
            "cp+fsync": f"cp --reflink=never {big} {out} && sync {out}",
        }, TRANSFERS, before=fresh)
        mibs = lambda s: GIB / s / (1 << 20)
        print("| operation | seconds | MiB/s | / cp | / cp+fsync |")
        print("|---|---|---|---|---|")
        for name in names:
            print(f"| {name} | {t[name]:.2f} | {mibs(t[name]):.0f} | "
                  f"{t['cp'] / t[name]:.2f} | {t['cp+fsync'] / t[name]:.2f} |")
        for path in [big] + previous:
            if os.path.exists(path):
                os.unlink(path)
        settle()

    if "tree" in PARTS:
        print("\n### A 20,000-file tree as a tar stream\n")
        src = os.path.join(scratch, "tree")
        populate(src, 20000, b"some file content\n")
        dst = os.path.join(scratch, "copy")
        sh(f"tar -C {src} -cf - . | curl -sSf -T - "
           f"-H 'Content-Type: application/x-tar' {url('tree')}")
        settle()
        t = interleaved({
            # Into a new directory each time, as tar -x below: replacing a
            # tree also removes the old one before it answers.
            "upload": lambda i: f"tar -C {src} -cf - . | curl -sSf -T - "
                                f"-H 'Content-Type: application/x-tar' "
                                f"{url(f'tree{i}')}",
            "download": f"curl -sSf {url('tree')} | tar -C {dst} -xf -",
            "tar": f"tar -C {src} -cf - . | tar -C {dst} -xf -",
        }, TRANSFERS, before={"download": f"rm -rf {dst} && mkdir {dst}",
                              "tar": f"rm -rf {dst} && mkdir {dst}"})
        print("| operation | seconds | files/s | / `tar -c \\| tar -x` |")
        print("|---|---|---|---|")
        for name in ("upload", "download", "tar"):
            print(f"| {name} | {t[name]:.2f} | {20000 / t[name]:.0f} | "
                  f"{t['tar'] / t[name]:.2f} |")
        shutil.rmtree(src)
        shutil.rmtree(dst, ignore_errors=True)
        settle()

    if "fork" in PARTS:
        print("\n### session.fork from a checkpoint, by tree size\n")
        cli_dir = os.path.join(root, "cli-forks")
        os.makedirs(cli_dir)
        sizes = (0, 100000)
        for files in sizes:
            s = f"f{files}"
            rpc("session.create", agent_id="bench", session_id=s)
            populate(os.path.join(current(s), "tree"), files)
            rpc("checkpoint.create", agent_id="bench", session_id=s,
                checkpoint_id="base")
        settle()
        cps = lambda s: os.path.join(root, "agents", "bench", "workspace",
                                     "sessions", s, "checkpoints")
        def snapshot(src, dst, *flags):
            subprocess.run(["btrfs", "subvolume", "snapshot", *flags, src, dst],
                           stdout=subprocess.DEVNULL, check=True)

        samples = {}
        for i in range(SAMPLES + 2):
            for k, files in enumerate(sizes):
                s = f"f{files}"
                order = ("rpc", "cli", "cli2")
                shift = (i + k) % len(order)
                for what in order[shift:] + order[:shift]:
                    t0 = time.perf_counter()
                    if what == "rpc":
                        rpc("session.fork", agent_id="bench", session_id=s,
                            checkpoint_id="base", new_session_id=f"{s}-k{i}")
                    else:
                        new = os.path.join(cli_dir, f"{s}-{what}-{i}")
                        snapshot(os.path.join(cps(s), "base"), new)
                        # The fork's own kernel work: its current/ and the
                        # read-only baseline checkpoint of it.
                        if what == "cli2":
                            snapshot(new, new + "-baseline", "-r")
                    if i >= 2:  # two warm-up rounds
                        samples.setdefault((what, files), []).append(
                            (time.perf_counter() - t0) * 1000)
                    # Untimed: a fork's baseline snapshot follows its
                    # reply; it must not delay the next sample's commit.
                    time.sleep(0.03)
        print("| files in the checkpoint | session.fork (RPC) p50 | "
              "`btrfs subvolume snapshot` (CLI) p50 | RPC / CLI | "
              "two CLI snapshots (current/ + baseline) p50 | RPC / two |")
        print("|---|---|---|---|---|---|")
        p50 = {key: median(v) for key, v in samples.items()}
        for files in sizes:
            r, c, c2 = (p50[(w, files)] for w in ("rpc", "cli", "cli2"))
            print(f"| {files:,} | {r:.2f} ms | {c:.2f} ms | {r / c:.2f} | "
                  f"{c2:.2f} ms | {r / c2:.2f} |")
        print(f"\nFlatness: fork p50 at 100,000 files / at 0 = "
              f"{p50[('rpc', 100000)] / p50[('rpc', 0)]:.2f}.")

    if "small" in PARTS:
        print("\n### 1 KiB PUT /v1/files/... against write + fsync + rename\n")
        body = b"x" * 1024
        put = http.client.HTTPConnection("127.0.0.1", port)
        raw_dir = os.path.join(scratch, "small")
        os.makedirs(raw_dir)
        lat = {"put": [], "raw": []}
        for i in range(SMALL):
            name = f"small{i % 50}.txt"
            t = time.perf_counter()
            put.request("PUT", f"/v1/files/bench/s/{name}", body)
            r = put.getresponse()
            r.read()
            if r.status != 200:
                raise RuntimeError(f"PUT {name}: {r.status}")
            lat["put"].append((time.perf_counter() - t) * 1000)
            # The same durability by hand: temp file, fsync, rename,
            # directory fsync.
            t = time.perf_counter()
            tmp = os.path.join(raw_dir, "." + name)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, body)
            os.fsync(fd)
            os.close(fd)
            os.rename(tmp, os.path.join(raw_dir, name))
            dfd = os.open(raw_dir, os.O_RDONLY)
            os.fsync(dfd)
            os.close(dfd)
            lat["raw"].append((time.perf_counter() - t) * 1000)
        put.close()
        (p50, p99), (r50, r99) = p50_p99(lat["put"]), p50_p99(lat["raw"])
        print("| samples | PUT p50 / p99 | raw p50 / p99 | PUT - raw (p50) |")
        print("|---|---|---|---|")
        print(f"| {SMALL} | {p50:.2f} / {p99:.2f} ms | {r50:.2f} / {r99:.2f} "
              f"ms | {p50 - r50:+.2f} ms |")

finally:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    subprocess.run(["umount", root], stderr=subprocess.DEVNULL)
    shutil.rmtree(work, ignore_errors=True)
