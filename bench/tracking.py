#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Process tracking in the daemon (docs/benchmarks.md, "Process tracking in
the daemon").

Two daemons side by side, each on a fresh loop-backed store of its own: one
with --process-tracking disabled, one with ebpf. Each round runs, in both,
a session run of a shell loop of BENCH_LOOP `/bin/true` (default 3,000);
the order alternates between rounds. Reported per mode: the loop's own time
(measured inside the run with `date +%s%N`), process.start to the
process.wait reply, and, tracked, the events received and lost, whether the
trace was complete, and the daemon's CPU time (utime + stime from
/proc/<pid>/stat) over the run, as CPU per 1,000 events/s, and its
wake-ups (the voluntary context switches of its threads) over the run.

Usage (root): bench/tracking.py [build-dir]   (default build/release)
Also: process.start + process.wait of /bin/true in both, BENCH_SAMPLES
times each, alternating.
Environment: BENCH_ROUNDS (default 7), BENCH_LOOP (default 3000),
BENCH_SAMPLES (default 50).
"""
import glob, http.client, json, os, random, shutil, signal, statistics
import subprocess, sys, tempfile, time

from benchlib import p50_p99

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
daemon_bin = os.path.join(build, "bin", "allox-workspace-daemon")
init_bin = os.path.join(build, "bin", "allox-sandbox-init")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))
LOOP = int(os.environ.get("BENCH_LOOP", "3000"))
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "50"))
TICKS = os.sysconf("SC_CLK_TCK")
v2 = next(l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2")


class Daemon:
    def __init__(self, tracking):
        self.tracking = tracking
        self.work = tempfile.mkdtemp(prefix="allox-bench-")
        self.port = random.randint(20000, 40000)
        self.cg_root = os.path.join(v2, os.path.basename(self.work))
        self.proc = subprocess.Popen(
            [daemon_bin, "--root", os.path.join(self.work, "store"),
             "--loop-image", os.path.join(self.work, "store.img"),
             "--loop-size", "4G", "--listen", f"127.0.0.1:{self.port}",
             "--process-audit-root", os.path.join(self.work, "runs"),
             "--process-cgroup-root", self.cg_root,
             "--sandbox-init", init_bin, "--process-tracking", tracking],
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.work, "daemon.log"), "w"))
        self.conn = None
        for _ in range(300):
            try:
                self.rpc("process.status")
                break
            except Exception:
                time.sleep(0.05)
        self.rpc("session.create", agent_id="a", session_id="s")

    def rpc(self, action, **params):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port)
        try:
            self.conn.request("POST", "/v1/rpc",
                              json.dumps({"action": action, "params": params}))
            r = json.loads(self.conn.getresponse().read())
        except (ConnectionError, http.client.HTTPException):
            self.conn = None
            raise
        if not r.get("ok"):
            raise RuntimeError(f"{action}: {r}")
        return r["result"]

    def cpu(self):
        fields = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def switches(self):
        """Voluntary context switches of all the daemon's threads: its
        wake-ups (threads that ended meanwhile drop out)."""
        total = {}
        for status in glob.glob(f"/proc/{self.proc.pid}/task/*/status"):
            try:
                for line in open(status):
                    if line.startswith("voluntary_ctxt_switches"):
                        total[status] = int(line.split()[1])
            except OSError:
                pass
        return total

    def run_loop(self):
        script = (f"date +%s%N; i=0; while [ $i -lt {LOOP} ]; do /bin/true; "
                  f"i=$((i+1)); done; date +%s%N")
        cpu0 = self.cpu()
        sw0 = self.switches()
        t0 = time.monotonic()
        row = self.rpc("process.start", agent_id="a", session_id="s",
                       argv=["sh", "-c", script], timeout=600)
        while row["state"] in ("starting", "running"):
            row = self.rpc("process.wait", agent_id="a", session_id="s",
                           run_id=row["run_id"], timeout_ms=60000)
        t1 = time.monotonic()
        cpu1 = self.cpu()
        sw1 = self.switches()
        wakeups = sum(v - sw0[k] for k, v in sw1.items() if k in sw0)
        out = self.rpc("process.output", agent_id="a", session_id="s",
                       run_id=row["run_id"], stream="stdout")["data"].split()
        loop_s = (int(out[1]) - int(out[0])) / 1e9
        return {"loop": loop_s, "rpc": t1 - t0, "cpu": cpu1 - cpu0,
                "wakeups": wakeups,
                "events": row.get("event_count", 0),
                "lost": row.get("events_lost", 0),
                "complete": row.get("trace_complete"), "state": row["state"]}

    def true_latency(self):
        t0 = time.monotonic()
        row = self.rpc("process.start", agent_id="a", session_id="s",
                       argv=["/bin/true"])
        while row["state"] in ("starting", "running"):
            row = self.rpc("process.wait", agent_id="a", session_id="s",
                           run_id=row["run_id"], timeout_ms=60000)
        return (time.monotonic() - t0) * 1000

    def close(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        shutil.rmtree(self.work, ignore_errors=True)
        for dirpath, _, _ in sorted(os.walk(self.cg_root), reverse=True):
            try:
                os.rmdir(dirpath)
            except OSError:
                pass


def main():
    daemons = {"disabled": Daemon("disabled"), "ebpf": Daemon("ebpf")}
    results = {k: [] for k in daemons}
    try:
        for r in range(ROUNDS):
            order = ["disabled", "ebpf"] if r % 2 == 0 else ["ebpf", "disabled"]
            for mode in order:
                res = daemons[mode].run_loop()
                results[mode].append(res)
                print(f"round {r + 1} {mode:8}: loop {res['loop']:.3f} s, "
                      f"rpc {res['rpc']:.3f} s, daemon cpu {res['cpu']:.2f} s, "
                      f"wake-ups {res['wakeups']}, "
                      f"events {res['events']}, lost {res['lost']}, "
                      f"complete {res['complete']}, {res['state']}",
                      flush=True)
        lat = {k: [] for k in daemons}
        for i in range(2 * SAMPLES):
            mode = ["disabled", "ebpf"][i % 2]
            lat[mode].append(daemons[mode].true_latency())
    finally:
        for d in daemons.values():
            d.close()
    print()
    print("| mode | loop best | loop median | start to wait reply (median) "
          "| daemon CPU per run (median) | daemon wake-ups per run (median) |")
    print("|---|---|---|---|---|---|")
    med = {}
    for mode, rs in results.items():
        loops = [x["loop"] for x in rs]
        med[mode] = statistics.median(loops)
        print(f"| {mode} | {min(loops):.3f} s | {med[mode]:.3f} s | "
              f"{statistics.median(x['rpc'] for x in rs):.3f} s | "
              f"{statistics.median(x['cpu'] for x in rs):.2f} s | "
              f"{statistics.median(x['wakeups'] for x in rs):.0f} |")
    best = {m: min(x["loop"] for x in rs) for m, rs in results.items()}
    print()
    print(f"tracking on / off: median {med['ebpf'] / med['disabled']:.3f}, "
          f"best {best['ebpf'] / best['disabled']:.3f} (target <= 1.05)")
    # Each round runs both modes back to back: the ratio within a round
    # is the least disturbed by the machine's drift between rounds.
    paired = sorted(on["loop"] / off["loop"]
                    for on, off in zip(results["ebpf"], results["disabled"]))
    print(f"per round, tracked / untracked: median "
          f"{statistics.median(paired):.3f}, mean {statistics.mean(paired):.3f}, "
          f"range {paired[0]:.3f} to {paired[-1]:.3f}")
    on = results["ebpf"]
    rates = [x["events"] / x["loop"] for x in on]
    per_k = [(x["cpu"] / x["loop"]) / (x["events"] / x["loop"] / 1000)
             for x in on]
    print(f"tracked: events per run {statistics.median(x['events'] for x in on)}"
          f", lost {sum(x['lost'] for x in on)}, complete "
          f"{sum(1 for x in on if x['complete'])}/{len(on)}; "
          f"{statistics.median(rates):.0f} events/s; daemon CPU "
          f"{100 * statistics.median(per_k):.2f}% of a core per 1,000 "
          f"events/s")
    off_cpu = statistics.median(x["cpu"] for x in results["disabled"])
    print(f"daemon CPU per run, untracked: {off_cpu:.2f} s")
    for mode, xs in lat.items():
        p50, p99 = p50_p99(xs)
        print(f"process.start + process.wait of /bin/true, {mode}: p50 "
              f"{p50:.2f} ms, p99 {p99:.2f} ms")


if __name__ == "__main__":
    main()
