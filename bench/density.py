#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Density (docs/benchmarks.md, "Density"): how the daemon holds up as
sessions pile up in one VM.

N = 1, 50, 200 sessions (BENCH_DENSITY_STEPS), each with one live idle
process (`sleep`) and a live checkpoint per minute (spread evenly over the
minute, on a thread of its own). At each N: the daemon's RSS (the RPC
actor's rss_bytes in system.dump) and its growth per session, the VM's
used memory (MemTotal - MemAvailable, read by a run) per session, and
p50/p99 of checkpoint.create (live, on a random session) and of
process.start + wait of /bin/true (on a probe session), each as a ratio
to N = 1. Target: flat within 1.5x from 1 to 200.

Usage: bench/density.py URL TOKEN   (a running daemon that runs commands,
       e.g. the guest VM's: bench/guest_density.sh)
       bench/density.py [build-dir] (a release daemon on a fresh store here)
Writes JSON to $BENCH_JSON when set. BENCH_BACKGROUND=0 takes no live
checkpoints in the background.
"""
import json, os, random, sys, threading, time
import urllib.error, urllib.request

from benchlib import Daemon, p50_p99

STEPS = [int(n) for n in
         os.environ.get("BENCH_DENSITY_STEPS", "1,50,200").split(",")]
# 100, so that p99 (nearest rank) is the 99th sample, not the slowest:
# with 60 it was the maximum, one slow sample under TCG.
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "100"))
AGENT = "density"


class Remote:
    """The RPC of a daemon at `url` with a bearer token."""

    def __init__(self, url, token):
        self.url, self.token = url, token

    def rpc(self, action, **params):
        headers = {"Authorization": "Bearer " + self.token} if self.token \
            else {}
        req = urllib.request.Request(
            self.url + "/v1/rpc", method="POST",
            data=json.dumps({"action": action, "params": params}).encode(),
            headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=300) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            return json.loads(e.read() or b"{}")


def must(d, action, **params):
    r = d.rpc(action, **params)
    if not r.get("ok"):
        raise RuntimeError(f"{action} {params}: {r}")
    return r["result"]


def ids(i):
    return {"agent_id": AGENT, "session_id": f"s{i}"}


def daemon_rss(d):
    """The daemon's resident bytes, from the RPC actor's stats."""
    def find(node):
        if node.get("kind") == "rpc":
            return node.get("rss_bytes")
        for c in node.get("children", []):
            v = find(c)
            if v is not None:
                return v
    return find(must(d, "system.dump")["tree"])


def vm_used_bytes(d, probe):
    """MemTotal - MemAvailable of the machine, read by a run."""
    row = must(d, "process.start", **probe, argv=["cat", "/proc/meminfo"])
    must(d, "process.wait", **probe, run_id=row["run_id"], timeout_ms=60000)
    text = must(d, "process.output", **probe, run_id=row["run_id"])["data"]
    kb = {l.split(":")[0]: int(l.split()[1]) for l in text.splitlines()}
    return (kb["MemTotal"] - kb["MemAvailable"]) * 1024


class Checkpointer:
    """One live checkpoint per session per minute, spread over the minute."""

    def __init__(self, d):
        self.d, self.n, self.stop = d, 0, threading.Event()
        self.errors = 0
        self.done = 0
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        i, due = 0, time.monotonic()
        while not self.stop.is_set():
            n = self.n
            # The interval follows n as the sessions grow.
            if n == 0 or time.monotonic() < due:
                self.stop.wait(0.05)
                continue
            r = self.d.rpc("checkpoint.create", **ids(i % n))
            self.done += 1
            self.errors += not r.get("ok")
            i += 1
            due = max(due + 60.0 / n, time.monotonic() - 1)


def measure(d, probe, n):
    cp, start = [], []
    for k in range(SAMPLES + 1):
        t0 = time.perf_counter()
        must(d, "checkpoint.create", **ids(random.randrange(n)))
        cp.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        row = must(d, "process.start", **probe, argv=["true"])
        must(d, "process.wait", **probe, run_id=row["run_id"],
             timeout_ms=60000)
        start.append(time.perf_counter() - t0)
    # The first round warms caches after the sessions were made.
    return p50_p99(cp[1:]), p50_p99(start[1:])


def main():
    local = None
    if len(sys.argv) == 3:
        d = Remote(sys.argv[1], sys.argv[2])
        where = sys.argv[1]
    else:
        build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "build",
            "release")
        local = Daemon(build, "16G", execution=True)
        local.wait_ready()
        # Its own connection per request: the checkpointer is a thread.
        d = Remote(f"http://127.0.0.1:{local.port}", "")
        where = "a release daemon on this machine"
    probe = {"agent_id": AGENT + "-probe", "session_id": "probe"}
    must(d, "session.create", **probe)
    cps = Checkpointer(d)
    rows, made = [], 0
    try:
        for n in STEPS:
            while made < n:
                must(d, "session.create", **ids(made))
                must(d, "process.start", **ids(made),
                     argv=["sleep", "100000"], timeout=86400)
                made += 1
            # BENCH_BACKGROUND=0 leaves the sessions' checkpoints out, to
            # tell their load from what the number of sessions costs.
            cps.n = n if os.environ.get("BENCH_BACKGROUND", "1") != "0" else 0
            time.sleep(2)
            (c50, c99), (s50, s99) = measure(d, probe, n)
            rows.append({"sessions": n, "daemon_rss": daemon_rss(d),
                         "vm_used": vm_used_bytes(d, probe),
                         "checkpoint_p50": c50, "checkpoint_p99": c99,
                         "start_p50": s50, "start_p99": s99})
            print(f"# N={n}: {json.dumps(rows[-1])}", flush=True)
    finally:
        cps.stop.set()
        if local:
            # The idle runs would outlive the daemon (live restore); the
            # daemon and its loop device go whatever happens here.
            try:
                for i in range(made):
                    # Without a limit, process.list is a bare array of rows.
                    for row in must(d, "process.list", **ids(i)):
                        if row["state"] == "running":
                            d.rpc("process.stop", **ids(i),
                                  run_id=row["run_id"])
            finally:
                local.stop()
    base = rows[0]
    print(f"### Density ({where}; {SAMPLES} samples per step, a live "
          f"checkpoint per session per minute in the background: "
          f"{cps.done} taken, {cps.errors} failed)")
    print("| sessions | daemon RSS | RSS / session | VM used / session | "
          "checkpoint.create p50 / p99 | process.start p50 / p99 | "
          "p99 vs N=1 (checkpoint, start) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        n = r["sessions"]
        extra = n - base["sessions"]
        per = lambda k: (f"{(r[k] - base[k]) / extra / 1024:.0f} KiB"
                         if extra else "-")
        print(f"| {n} | {r['daemon_rss'] / 2**20:.1f} MiB | "
              f"{per('daemon_rss')} | {per('vm_used')} | "
              f"{r['checkpoint_p50'] * 1e3:.1f} / "
              f"{r['checkpoint_p99'] * 1e3:.1f} ms | "
              f"{r['start_p50'] * 1e3:.0f} / {r['start_p99'] * 1e3:.0f} ms | "
              f"{r['checkpoint_p99'] / base['checkpoint_p99']:.2f}x, "
              f"{r['start_p99'] / base['start_p99']:.2f}x |")
    if os.environ.get("BENCH_JSON"):
        with open(os.environ["BENCH_JSON"], "w") as f:
            json.dump(result_file(rows, where, cps), f, indent=1)


def result_file(rows, where, cps):
    """The run in bench/plot.py's result format: each N against N = 1."""
    base = rows[0]
    cells = []
    for r in rows[1:]:
        for name, key in (("checkpoint.create", "checkpoint"),
                          ("process.start + wait", "start")):
            cells.append({
                "name": f"{name}, {r['sessions']} sessions", "unit": "ms",
                "p50": r[key + "_p50"] * 1e3, "p99": r[key + "_p99"] * 1e3,
                "baseline": f"{base['sessions']} session",
                "baseline_p50": base[key + "_p50"] * 1e3,
                "baseline_p99": base[key + "_p99"] * 1e3,
                "target_ratio": 1.5, "raw": False})
    return {"bench": "density",
            "date": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
            "title": f"Density ({where}), {SAMPLES} samples per step",
            "cells": cells, "rows": rows,
            "background_checkpoints": cps.done,
            "background_failures": cps.errors}

main()
