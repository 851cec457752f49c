#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where the time of checkpoint.create goes with 20 MiB of unsynced data
(docs/benchmarks.md, "Checkpoints"), next to the CLI snapshot.

Runs `BENCH_ONLY=dirty bench/checkpoints.py` under `perf record` with a few
syscall tracepoints and splits every sample at the snapshot ioctl:
  before: from the request (sendto) or the process start (vfork) to the
          ioctl,
  ioctl:  BTRFS_IOC_SNAP_CREATE_V2 itself (write-out and commit),
  after:  from the ioctl's return to the reply (recvfrom) or the exit of
          the `btrfs` process (wait4).
perf slows down process start, so the CLI's "before" reads high here; the
"after" column is the comparable one.
Usage (root): bench/create_breakdown.py [build-dir]   (needs linux-perf)
"""
import os, re, shutil, signal, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    here, "..", "build", "release")
if shutil.which("perf") is None:
    sys.exit("create_breakdown: perf not found (scripts/install-deps.sh "
             "installs linux-perf)")

SNAP_CREATE_V2 = "cmd: 0x50009417"
BLOB_WRITE = "count: 0x01400000"  # the bench's 20 MiB write
events = ["sys_enter_ioctl", "sys_exit_ioctl", "sys_enter_sendto",
          "sys_exit_recvfrom", "sys_enter_vfork", "sys_exit_wait4",
          "sys_enter_write", "sys_enter_unlink", "sys_enter_unlinkat"]

work = tempfile.mkdtemp(prefix="allox-breakdown-")
data = os.path.join(work, "perf.data")
perf = subprocess.Popen(
    ["perf", "record", "-q", "-a", "-o", data] +
    [arg for e in events for arg in ("-e", f"syscalls:{e}")],
    stderr=subprocess.DEVNULL)
try:
    time.sleep(2)
    subprocess.run([sys.executable, os.path.join(here, "checkpoints.py"),
                    build], env=dict(os.environ, BENCH_ONLY="dirty"),
                   check=True)
finally:
    perf.send_signal(signal.SIGINT)
    perf.wait(timeout=120)
script = subprocess.run(["perf", "script", "-i", data], capture_output=True,
                        text=True).stdout
shutil.rmtree(work, ignore_errors=True)

line = re.compile(r"\s*\S+\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+syscalls:(\w+):\s*(.*)")
trace = []
for text in script.splitlines():
    m = line.match(text)
    if m:
        pid, ts, name, args = m.groups()
        trace.append((float(ts) * 1000, int(pid), name, args))

# The bench process is the one writing the 20 MiB blobs; each blob write
# starts a sample, an unlink just before it marks the new-file pattern.
writers = [pid for _, pid, name, args in trace
           if name == "sys_enter_write" and BLOB_WRITE in args]
if not writers:
    sys.exit("create_breakdown: no samples recorded")
bench = writers[0]
samples, cur, unlinked = [], None, False
for ts, pid, name, args in trace:
    if pid == bench and name in ("sys_enter_unlink", "sys_enter_unlinkat"):
        unlinked = True
    elif pid == bench and name == "sys_enter_write" and BLOB_WRITE in args:
        if cur:
            samples.append(cur)
        cur, unlinked = {"pattern": "new" if unlinked else "rewrite"}, False
    elif cur is None:
        continue
    elif pid == bench and "kind" not in cur and name in (
            "sys_enter_sendto", "sys_enter_vfork"):
        cur.update(kind="rpc" if name == "sys_enter_sendto" else "cli",
                   start=ts)
    elif name == "sys_enter_ioctl" and SNAP_CREATE_V2 in args and "start" in cur:
        cur.update(ioctl_pid=pid, ioctl_in=ts)
    elif name == "sys_exit_ioctl" and pid == cur.get("ioctl_pid") \
            and "ioctl_out" not in cur:
        cur["ioctl_out"] = ts
    elif pid == bench and name in ("sys_exit_recvfrom", "sys_exit_wait4"):
        cur["end"] = ts
if cur:
    samples.append(cur)

print("\n### Breakdown (medians, ms)\n")
print("| the 20 MiB | path | samples | before | ioctl | after | total |")
print("|---|---|---|---|---|---|---|")
for pattern in ("rewrite", "new"):
    for kind in ("rpc", "cli"):
        rows = [s for s in samples if s.get("pattern") == pattern and
                s.get("kind") == kind and "ioctl_out" in s and "end" in s]
        if not rows:
            continue
        med = lambda f: statistics.median(f(s) for s in rows)
        print(f"| {pattern} | {kind} | {len(rows)} | "
              f"{med(lambda s: s['ioctl_in'] - s['start']):.2f} | "
              f"{med(lambda s: s['ioctl_out'] - s['ioctl_in']):.2f} | "
              f"{med(lambda s: s['end'] - s['ioctl_out']):.2f} | "
              f"{med(lambda s: s['end'] - s['start']):.2f} |")
