#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# guest/image/noisy-neighbours.py BASE_URL TOKEN: one session cannot take
# the VM from another. Run by guest/image/boot-test.sh against the daemon
# in the guest VM, whose cgroup tree has the cpu, memory and pids
# controllers.
#
# Session "noisy" (agent-2) gets memory.max, pids.max and cpu.max, then
# runs in turn a fork bomb, a memory hog past its limit, a CPU spinner on
# every core, with io.max on the store's device a writer that rewrites
# and fsyncs an 8 MiB file, and with disk.max 32M (the store's Btrfs
# quotas) a filler that writes until its share is full, then holds it,
# and a run printing without end (its logs are held to the share too).
# Meanwhile session "steady" loops process.start (+ wait), then
# checkpoint.create and a small file.write ten times. Its latencies under
# each load are compared with the same loop on the idle VM just before
# that load (taken again when far above the calmest one: idle_loop),
# every p99 held at 3x; a phase with one over is measured once more, and
# an operation fails only when it is over in both attempts (noisy_phase
# says why). Prints one PASS or FAIL line per assertion and exits 1 when
# any failed.
#
#   ALLOX_NOISY_ROUNDS  steady loop rounds (runs) per phase (default 10)
#   ALLOX_NOISY_PER_RUN checkpoints and writes per round (default 10)
#   ALLOX_NOISY_RATIO   allowed p99 ratio loaded/idle (default 3)
import http.client
import json
import math
import os
import sys
import threading
import time
import urllib.parse

base, token = "", ""  # from the command line (the end of this file)
rounds = int(os.environ.get("ALLOX_NOISY_ROUNDS", "10"))
per_run = int(os.environ.get("ALLOX_NOISY_PER_RUN", "10"))
allowed = float(os.environ.get("ALLOX_NOISY_RATIO", "3"))
failed = 0
# Every checkpoint the steady session was answered for, in every loop.
acknowledged = []

NOISY = {"agent_id": "agent-2", "session_id": "noisy"}
STEADY = {"agent_id": "agent-2", "session_id": "steady"}
# Half of one core for the noisy session (the VM has two), in short
# periods so that its bursts stay short, and a low weight so that a
# neighbour wins whenever both want a core.
LIMITS = {"memory.max": "96M", "pids.max": "64", "cpu.max": "10000 20000",
          "cpu.weight": "10"}


HOG = "x=a; while :; do x=$x$x; done"
HOGS = ("end=$(($(date +%s) + " + str(rounds * 3 // 2) + ")); "
        "while [ $(date +%s) -lt $end ]; do sh -c '" + HOG + "'; done")


def check(name, ok, detail=""):
    global failed
    print(("PASS  " if ok else "FAIL  ") + name, flush=True)
    if detail:
        print("      " + detail, flush=True)
    if not ok:
        failed += 1
    return ok


# One kept-alive connection per thread, as a client of the daemon keeps
# one: a new TCP connection per call would time the VM's user-mode
# network as much as the daemon. A connection idle for a while is not
# reused: once, a request sent on one idle for about ten seconds got no
# answer until its timeout, through the VM's user-mode network (cause not
# found), and a new connection costs little next to such a wait.
connections = threading.local()
reuse_within = 3.0  # seconds


def rpc(action, params, timeout=120):
    """The parsed reply; {"ok": False, "error": ...} on a transport error."""
    body = json.dumps({"action": action, "params": params})
    url = urllib.parse.urlsplit(base)
    conn = getattr(connections, "conn", None)
    if conn is not None and time.monotonic() - connections.used > reuse_within:
        conn.close()
        conn = None
    try:
        if conn is None:
            conn = connections.conn = http.client.HTTPConnection(
                url.hostname, url.port)
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        conn.request("POST", "/v1/rpc", body=body, headers={
            "Authorization": "Bearer " + token,
            "Content-Type": "application/json"})
        r = conn.getresponse()
        reply = json.loads(r.read() or b"{}")
        connections.used = time.monotonic()
        return reply if r.status == 200 else reply | {"ok": False}
    except Exception as e:  # a refused or dropped connection
        connections.conn = None
        if conn is not None:
            conn.close()
        return {"ok": False, "error": repr(e)}


def must(action, params, timeout=120):
    r = rpc(action, params, timeout)
    if not r.get("ok"):
        raise RuntimeError(f"{action}: {r}")
    return r["result"]


def run_to_end(session, argv, timeout_s=60):
    row = must("process.start", session | {"argv": argv})
    return must("process.wait", session | {"run_id": row["run_id"],
                                           "timeout_ms": timeout_s * 1000},
                timeout=timeout_s + 30)


def p50(xs):
    return sorted(xs)[len(xs) // 2]


def p99(xs):
    """Nearest rank: the least sample that 99% of the samples do not
    exceed (of 100, the 99th; of fewer, the largest)."""
    xs = sorted(xs)
    return xs[max(0, math.ceil(0.99 * len(xs)) - 1)]


class steady_loop:
    """The steady session's loop on a thread of its own, for `rounds`
    rounds: per operation the latencies, and every error."""

    def __init__(self, tag):
        self.tag = tag
        self.lat = {"process.start": [], "checkpoint.create": [],
                    "file.write": []}
        self.errors = []
        self.thread = threading.Thread(target=self.loop)

    def timed(self, op, call):
        t0 = time.monotonic()
        try:
            r = call()
        except Exception as e:
            self.errors.append(f"{op}: {e}")
            return None
        self.lat[op].append(time.monotonic() - t0)
        return r

    def loop(self):
        for i in range(rounds):
            # A run: start, then wait for its end (the lease is held
            # until then), timed as one operation.
            def start_and_wait():
                row = run_to_end(STEADY, ["true"])
                if row["state"] != "completed":
                    raise RuntimeError(f"run ended {row['state']}")
            self.timed("process.start", start_and_wait)
            # Then checkpoints and small writes, several per run: a p99
            # takes 100 samples to leave out the slowest one.
            for j in range(per_run):
                cp = self.timed("checkpoint.create", lambda: must(
                    "checkpoint.create",
                    STEADY | {"message": f"{self.tag}-{i}.{j}"}))
                if cp:
                    acknowledged.append(cp["checkpoint_id"])
                self.timed("file.write", lambda: must(
                    "file.write", STEADY | {"path": f"{self.tag}.txt",
                                            "data": f"{self.tag} {i}.{j}\n"}))

    def start(self):
        self.thread.start()
        return self

    def join(self):
        self.thread.join()
        return self


def ratio(idle, loaded, op):
    return p99(loaded.lat[op]) / p99(idle.lat[op])


def over_bounds(idle, loaded):
    """The operations whose loaded p99 exceeds its bound against idle."""
    return [op for op, xs in loaded.lat.items()
            if xs and ratio(idle, loaded, op) > allowed]


def figures(idle, loaded, op):
    xs, base = loaded.lat[op], idle.lat[op]
    return (f"p99 {p99(xs) * 1000:.0f} ms, idle {p99(base) * 1000:.0f} ms, "
            f"{p99(xs) / p99(base):.2f}x ({len(xs)} samples; p50 "
            f"{p50(xs) * 1000:.0f} ms, idle {p50(base) * 1000:.0f})")


def compare(phase, attempts):
    """Checks each operation of `phase` in its best attempt: one measured
    again because some p99 was over its bound fails an operation only
    when that operation is over in both (noisy_phase says why). The other
    attempt is printed beside it."""
    check(f"{phase}: the steady session saw no error",
          not any(l.errors for _, l in attempts),
          "; ".join(e for _, l in attempts for e in l.errors[:3]))
    for op, xs in attempts[0][1].lat.items():
        if not xs:
            continue
        name = f"{phase}: steady {op} p99 within {allowed:g}x of idle"
        best = min(range(len(attempts)),
                   key=lambda n: ratio(*attempts[n], op))
        detail = figures(*attempts[best], op)
        for n, (i, l) in enumerate(attempts, 1):
            if n - 1 != best:
                detail += f"; attempt {n}: {figures(i, l, op)}"
        check(name, ratio(*attempts[best], op) <= allowed, detail)


last_noisy_run = [None]


# The lowest idle p99 of each operation in this boot so far. An anchor
# over twice that was taken in a passing slowness (the memory hogs'
# aftermath: noisy_phase) and would flatter the load measured against
# it, so it is taken again (once: a second one stands).
calmest = {}
unsettled_by = 2.0


def unsettled(idle):
    """The operations whose idle p99 is over twice their calmest."""
    return [op for op, xs in idle.lat.items()
            if xs and op in calmest and p99(xs) > unsettled_by * calmest[op]]


def idle_once(phase, again=""):
    """One steady loop on the idle VM, checked for errors."""
    idle = steady_loop(f"{phase} idle{again}").start().join()
    check(f"{phase}: the steady session saw no error on the idle VM{again}",
          not idle.errors, "; ".join(idle.errors[:3]))
    return idle


def idle_loop(phase):
    """The steady loop on the idle VM, the anchor of `phase`."""
    idle = idle_once(phase)
    over = unsettled(idle)
    if over:
        print(f"      idle before {phase}: p99 over {unsettled_by:g}x the "
              "calmest idle loop (" + ", ".join(
                  f"{op} {p99(idle.lat[op]) * 1000:.0f} ms against "
                  f"{calmest[op] * 1000:.0f}" for op in over) +
              "); measuring it again", flush=True)
        idle = idle_once(phase, " again")
    for op, xs in idle.lat.items():
        print(f"      idle before {phase}: {op} p50 {p50(xs) * 1000:.0f} ms"
              f", p99 {p99(xs) * 1000:.0f} ms", flush=True)
        if xs:
            calmest[op] = min(calmest.get(op, p99(xs)), p99(xs))
    return idle


def noisy_phase(phase, argv, reason, ready=None):
    """The attempts at `phase` (see attempt): one, or two when a steady
    p99 of the first was over its bound. The driver runs on the host and
    reaches the guest through QEMU's user network; under TCG both vCPUs
    take turns on one host thread (vm.sh), and the host's two cores also
    serve QEMU's I/O thread and the driver, so one loop's p99
    (process.start's slowest of 10, the others' second slowest of 100)
    can be the host's. A phase is measured again, anchor and load
    anew, and an operation fails only when it is over its bound in both
    attempts: a slower neighbour shows in both, a hiccup of the host in
    one (a CI run beside the spinners had file.write over in the first
    attempt only, and process.start over in the second only). One such
    hiccup is the emulator's, after the memory hogs: seconds after them,
    for about a second, the kernel's zeroing of newly allocated pages
    for the steady session waits while TCG throws away tens of thousands
    of translated blocks (likely of program text the hogs' reclaim
    freed), slowing checkpoints in whatever phase comes then (KVM has no
    such cost; docs/benchmarks/history/noisy-neighbours.md,
    2026-12-07T22:50Z)."""
    attempts = [attempt(phase, argv, reason, ready)]
    over = over_bounds(*attempts[0])
    if over:
        print(f"      {phase}: steady {', '.join(over)} p99 over its bound;"
              " measuring the phase again", flush=True)
        attempts.append(attempt(phase, argv, reason, ready))
    return attempts


def attempt(phase, argv, reason, ready):
    """Loops the steady session on the idle VM, then starts the noisy run,
    loops the steady session beside it, ends the noisy run (process.stop,
    unless it ends by itself) and checks why it ended; (idle, loaded).
    `ready(run_id)`, if given, says when the load is there (polled for up
    to a minute); otherwise the loop starts after a second. The anchor is
    taken just before the load, on the same store: each loop adds 100
    checkpoints, and one anchor taken first compared the last phases, on
    a store with 500 more, against a younger one."""
    idle = idle_loop(phase)
    # A safety net: no phase outlives a stuck driver.
    row = must("process.start", NOISY | {"argv": argv, "timeout": 300})
    last_noisy_run[:] = [row["run_id"]]
    if ready:
        end = time.monotonic() + 60
        while not ready(row["run_id"]) and time.monotonic() < end:
            time.sleep(0.5)
    else:
        time.sleep(1)  # let the load build up
    loaded = steady_loop(phase).start().join()
    if reason == "requested":
        must("process.stop", NOISY | {"run_id": row["run_id"]})
    end = must("process.wait", NOISY | {"run_id": row["run_id"],
                                        "timeout_ms": 120000}, timeout=150)
    check(f"{phase}: the noisy run ends stopped, {reason}",
          end["state"] == "stopped" and end.get("stop_reason") == reason,
          json.dumps({k: end.get(k) for k in
                      ("state", "stop_reason", "root_exit_code", "error")}))
    usable = run_to_end(NOISY, ["true"])
    check(f"{phase}: the noisy session stays usable",
          usable["state"] == "completed", usable["state"])
    return idle, loaded


def main():
    status = must("process.status", {})
    ctl = status.get("cgroup_controllers", [])
    if not check("the cpu, memory and pids controllers reach the sessions",
                 all(c in ctl for c in ("cpu", "memory", "pids")),
                 json.dumps(ctl)):
        return  # unlimited, the loads would take the machine
    dump = must("system.dump", {})
    adj = dump["daemon"]["oom_score_adj"]
    check("the OOM killer passes the daemon over", adj <= -500, f"{adj}")
    pid_before = dump["daemon"].get("pid")
    for s in (NOISY, STEADY):
        must("session.create", s)
    r = rpc("session.configure", NOISY | {"limits": LIMITS})
    check("the noisy session's limits are taken, cpu.max among them",
          r.get("ok") is True, json.dumps(r)[:300])
    out = run_to_end(STEADY, ["sh", "-c", "cat /proc/self/oom_score_adj"])
    log = must("process.output", STEADY | {"run_id": out["run_id"]})
    check("a run starts at oom_score_adj 0", log["data"].strip() == "0",
          repr(log["data"]))
    # A subvolume's root is inode 256: the agent's shared area has a quota
    # group of its own, held to the default share (a plain directory
    # would count in none).
    out = run_to_end(STEADY, ["stat", "-c", "%i", "/agent/shared"])
    log = must("process.output", STEADY | {"run_id": out["run_id"]})
    check("the agent's shared area is a subvolume of its own",
          log["data"].strip() == "256", repr(log["data"]))

    phases = []
    # Every shell forks without end; past pids.max a fork fails, that shell
    # exits and another takes its pid: the churn goes on within cpu.max.
    # The run's own process forks once and becomes `sleep`, so the run
    # lasts until it is stopped (a shell whose fork fails exits).
    phases.append(("fork bomb", noisy_phase(
        "fork bomb",
        ["sh", "-c", "b() { while :; do b & done; }; b & exec sleep 600"],
        "requested")))
    u = must("session.describe", NOISY)["usage"]
    check("fork bomb: refused forks counted", (u["pids_refused"] or 0) > 0,
          json.dumps(u))
    # Hogs one after the other for a while, each killed at memory.max; the
    # run then ends by itself, as oom_killed.
    phases.append(("memory hog", noisy_phase(
        "memory hog", ["sh", "-c", HOGS], "oom_killed")))
    u = must("session.describe", NOISY)["usage"]
    check("memory hog: OOM kills counted", (u["oom_kills"] or 0) > 0,
          json.dumps(u))
    phases.append(("cpu spinners", noisy_phase(
        "cpu spinners",
        ["sh", "-c", "for i in 1 2 3 4; do (while :; do :; done) & done; wait"],
        "requested")))
    # Writes through io.max on the store's device: 8 MiB written and
    # fsynced, removed, again (the space it takes stays bounded); dd says
    # how fast each round went.
    device = status["store_devices"][0]
    r = rpc("session.configure", NOISY | {"limits": LIMITS | {
        "io.max": f"{device} rbps=8388608 wbps=8388608"}})
    check(f"io.max on the store's device {device} is taken",
          r.get("ok") is True, json.dumps(r)[:300])
    phases.append(("disk writer", noisy_phase(
        "disk writer",
        ["sh", "-c", "while :; do dd if=/dev/zero of=/workspace/io.bin "
         "bs=1M count=8 conv=fsync 2>&1 | tail -n 1; rm -f /workspace/io.bin; "
         "done"], "requested")))
    out = must("process.output", NOISY | {"run_id": last_noisy_run[0]})
    rounds_done = [l for l in out["data"].splitlines() if "copied" in l]
    check("disk writer: the writer wrote through io.max", len(rounds_done) > 0,
          f"{len(rounds_done)} rounds of 8 MiB; last: "
          f"{rounds_done[-1] if rounds_done else out['data'][-200:]!r}")
    # Fills the workspace up to its share of the store (still at io.max's
    # pace) until a write fails with EDQUOT, then holds its share: the
    # steady loop runs once the share is full and written back (dd's
    # fsync never ran; a writer's write-back at io.max's pace is the disk
    # writer's phase), and the store keeps room for the steady session's
    # checkpoints and the catalog. A filler that keeps
    # retrying is not contained yet: each refused write makes Btrfs flush
    # and commit the store's transaction, which every neighbour's fsync and
    # snapshot waits for (retried once a second, the steady checkpoint p99
    # reached 3.29x; five times a second, 4.6x).
    r = rpc("session.configure", NOISY | {"limits": LIMITS | {
        "io.max": f"{device} rbps=8388608 wbps=8388608",
        "disk.max": "32M"}})
    check("the noisy session's disk share is taken (the store's quotas are "
          "on)", r.get("ok") is True, json.dumps(r)[:300])
    phases.append(("disk filler", noisy_phase(
        "disk filler",
        ["sh", "-c", "i=0; while :; do i=$((i + 1)); dd if=/dev/zero "
         "of=/workspace/fill.$i bs=1M count=32 conv=fsync 2>&1 | "
         "grep -m1 -i quota && { sync -f /workspace && echo held; "
         "exec sleep 600; }; done"], "requested",
        ready=lambda run_id: "held" in must(
            "process.output", NOISY | {"run_id": run_id})["data"])))
    out = must("process.output", NOISY | {"run_id": last_noisy_run[0]})
    check("disk filler: writes past the share fail with EDQUOT",
          "Disk quota exceeded" in out["data"], repr(out["data"][-200:]))
    r = rpc("checkpoint.create", NOISY | {"message": "full"})
    check("disk filler: the full session still checkpoints",
          r.get("ok") is True, json.dumps(r)[:300])
    # Counted as of the last commit, which the checkpoint made.
    u = must("session.describe", NOISY)["usage"]
    disk = u.get("disk_bytes") or 0
    check("disk filler: describe counts the workspace up to its share",
          24 << 20 <= disk <= 40 << 20, json.dumps(u))
    write_after = ["sh", "-c", "dd if=/dev/zero of=/workspace/after bs=1M "
                   "count=8 conv=fsync status=none"]
    run_to_end(NOISY, ["sh", "-c", "rm -f /workspace/fill.*"])
    if status.get("store_quota_mode") == "simple":
        # The share holds what the session wrote and still pins: the
        # checkpoint "full" keeps the filler's bytes until it goes.
        pinned = run_to_end(NOISY, write_after)
        check("disk filler: its checkpoint holds its share, so deleting "
              "its files frees nothing (simple quotas)",
              pinned["state"] == "failed" or pinned["root_exit_code"] != 0,
              json.dumps({k: pinned.get(k) for k in
                          ("state", "root_exit_code", "error")}))
        must("checkpoint.delete", NOISY | {"checkpoint_id": r["result"][
            "checkpoint_id"]})
    # The cleaner frees a deleted tree's extents in the background.
    for _ in range(30):
        freed = run_to_end(NOISY, write_after)
        if freed["root_exit_code"] == 0:
            break
        time.sleep(1)
    check("disk filler: once it deletes (and its checkpoint goes), the "
          "session writes again",
          freed["state"] == "completed" and freed["root_exit_code"] == 0,
          json.dumps({k: freed.get(k) for k in ("state", "root_exit_code")}))
    # Prints without end. Its logs are on the data disk beside the store,
    # in a subvolume of the session's limited to its share (32M now;
    # guest/store/run_output.hpp): `yes` stops there with EDQUOT and the
    # run holds them full. The session's next run ("stays usable") gets
    # room by removing its finished runs' logs, which process.output then
    # says (logs_removed).
    def logs_size(run_id):
        return must("process.output", NOISY | {"run_id": run_id,
                                               "limit": 1})["size"]
    flood_sizes = {}

    def flood_held(run_id):
        """The logs stopped growing: `yes` met the limit (at io.max's 8
        MB/s it adds 4 MB between two polls)."""
        sizes = flood_sizes.setdefault(run_id, [])
        sizes.append(logs_size(run_id))
        return len(sizes) > 1 and sizes[-1] == sizes[-2] >= 16 << 20
    phases.append(("output flood", noisy_phase(
        "output flood", ["sh", "-c", "yes; exec sleep 600"], "requested",
        ready=flood_held)))
    # Read before the session's next run ("stays usable") made room.
    held = flood_sizes[last_noisy_run[0]][-1]
    check("output flood: the run's logs stop at the session's share",
          16 << 20 <= held <= 32 << 20, f"{held} bytes of stdout")
    gone = rpc("process.output", NOISY | {"run_id": last_noisy_run[0],
                                          "limit": 1})
    check("output flood: its logs made room for the next run",
          gone.get("ok") is True and gone["result"].get("logs_removed"),
          json.dumps(gone)[:300])
    for phase, attempts in phases:
        compare(phase, attempts)

    dump = must("system.dump", {})
    check("the daemon was never restarted",
          dump["daemon"].get("pid") == pid_before, f"{pid_before}")
    kept = must("checkpoint.list", STEADY)["checkpoint_ids"]
    check("every acknowledged checkpoint of the steady session is listed",
          set(acknowledged) <= set(kept),
          f"{len(acknowledged)} acknowledged, {len(kept)} listed")


if __name__ == "__main__":
    base, token = sys.argv[1], sys.argv[2]
    try:
        main()
    except Exception as e:
        check("noisy neighbours: the driver ran to the end", False, repr(e))
    print(f"noisy-neighbours: {failed} failed", flush=True)
    sys.exit(1 if failed else 0)
