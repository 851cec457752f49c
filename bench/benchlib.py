# SPDX-License-Identifier: Apache-2.0
"""What the benchmark scripts share: the daemon on a fresh loop-backed store
with its RPC, rounds of interleaved samples, and trees of small files."""
import http.client, json, os, random, shutil, signal, subprocess, tempfile
import time


class Daemon:
    """allox-workspace-daemon of `build` on a new loop image of `size`."""

    def __init__(self, build, size, prefix="allox-bench-", execution=False,
                 args=()):
        self.binary = os.path.join(build, "bin", "allox-workspace-daemon")
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.root = os.path.join(self.work, "store")
        self.port = random.randint(20000, 40000)
        extra = []
        if execution:
            # Runs, with their cgroups in a subtree of this benchmark's.
            v2 = next(l.split()[1] for l in open("/proc/mounts")
                      if l.split()[2] == "cgroup2")
            self.cgroups = os.path.join(v2, os.path.basename(self.work))
            extra = ["--process-audit-root", os.path.join(self.work, "runs"),
                     "--process-cgroup-root", self.cgroups,
                     "--sandbox-init",
                     os.path.join(build, "bin", "allox-sandbox-init")]
        self.proc = subprocess.Popen(
            [self.binary, "--root", self.root, "--loop-image",
             os.path.join(self.work, "store.img"), "--loop-size", size,
             "--listen", f"127.0.0.1:{self.port}"] + extra + list(args),
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.work, "daemon.log"), "w"))
        self.conn = None

    def rpc(self, action, **params):
        body = json.dumps({"action": action, "params": params})
        for _ in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1",
                                                           self.port)
                self.conn.request("POST", "/v1/rpc", body)
                r = json.loads(self.conn.getresponse().read())
                if not r.get("ok"):
                    raise RuntimeError(f"{action}: {r}")
                return r["result"]
            except (ConnectionError, http.client.HTTPException):
                self.conn = None
        raise RuntimeError("daemon unreachable")

    def wait_ready(self):
        for _ in range(500):
            try:
                self.rpc("agent.list")
                return
            except Exception:
                time.sleep(0.01)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        subprocess.run(["umount", self.root], stderr=subprocess.DEVNULL)
        shutil.rmtree(self.work, ignore_errors=True)
        # cgroup directories go with rmdir only, deepest first.
        for top, _, _ in sorted(os.walk(getattr(self, "cgroups", "/nonexistent")),
                                key=lambda w: -w[0].count("/")):
            try:
                os.rmdir(top)
            except OSError:
                pass


def p50_p99(xs):
    """The nearest-rank p50 and p99 of the samples: the values at ranks
    ceil(n/2) and ceil(0.99 n) in ascending order. (Taking int(0.99 n) as
    an index reads one rank too high: the maximum of 100 samples.)"""
    xs = sorted(xs)
    at = lambda percent: xs[max(0, -(-percent * len(xs) // 100) - 1)]
    return at(50), at(99)


def interleaved(fns, n, warmup=3, before=None, rounds=None):
    """Measures several operations in rounds, one sample of each per round,
    starting each round one place further along, so that drift in the file
    system (subvolumes piling up, background work) and in the VM weighs on
    all of them alike. `fns` maps a name to fn(i); `before(i)` runs untimed
    ahead of each sample (or `before[name](i)`, if it is a dict). Returns
    name -> (p50, p99); `rounds`, if given, receives name -> samples in
    round order."""
    names = list(fns)
    for i in range(warmup):
        for name in names:
            if isinstance(before, dict):
                before[name](n + i)
            elif before:
                before(n + i)
            fns[name](n + i)
    samples = {name: [] for name in names}
    for i in range(n):
        for k in range(len(names)):
            name = names[(i + k) % len(names)]
            if isinstance(before, dict):
                before[name](i)
            elif before:
                before(i)
            t = time.perf_counter()
            fns[name](i)
            samples[name].append((time.perf_counter() - t) * 1000)
    if rounds is not None:
        rounds.update({name: list(v) for name, v in samples.items()})
    return {name: p50_p99(v) for name, v in samples.items()}


def cell(p50, p99):
    return f"{p50:.2f} / {p99:.2f}"


def populate(base, files):
    """`files` one-byte files under base/tree, 1,000 per directory."""
    per_dir = 1000
    for i in range(files):
        d = os.path.join(base, "tree", f"d{i // per_dir}")
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i % per_dir}"), "w") as f:
            f.write("x")
