#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tracked-execution benchmarks (docs/benchmarks.md, "Runs").

Against the release daemon on a fresh loop-backed store:
  - process.start -> final state of /bin/true over RPC (process.wait, and
    polling process.get as callers did before it existed), next to raw
    bwrap with the same mounts and to a plain fork/exec of /bin/true;
  - the run's exit -> the process.wait reply and the SSE `end` event;
  - 50 sessions each running a short command at the same time;
  - session.rollback with kill_processes of a 100-process tree.
Usage (root): bench/runs.py [build-dir]   (default build/release)
"""
import concurrent.futures, http.client, json, os, random, shutil, signal
import socket, subprocess, sys, tempfile, threading, time

from benchlib import p50_p99

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
daemon_bin = os.path.join(build, "bin", "allox-workspace-daemon")
init_bin = os.path.join(build, "bin", "allox-sandbox-init")
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "50"))

work = tempfile.mkdtemp(prefix="allox-bench-")
root = os.path.join(work, "store")
port = random.randint(20000, 40000)
v2 = next(l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2")
cg_root = os.path.join(v2, os.path.basename(work))
proc = subprocess.Popen([daemon_bin, "--root", root, "--loop-image",
                         os.path.join(work, "store.img"), "--loop-size", "8G",
                         "--listen", f"127.0.0.1:{port}",
                         "--process-audit-root", os.path.join(work, "runs"),
                         "--process-cgroup-root", cg_root,
                         "--sandbox-init", init_bin],
                        stdout=subprocess.DEVNULL,
                        stderr=open(os.path.join(work, "daemon.log"), "w"))


class Client:
    def __init__(self):
        self.conn = None

    def rpc(self, action, **params):
        body = json.dumps({"action": action, "params": params})
        for _ in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", port)
                self.conn.request("POST", "/v1/rpc", body)
                r = json.loads(self.conn.getresponse().read())
                if not r.get("ok"):
                    raise RuntimeError(f"{action}: {r}")
                return r["result"]
            except (ConnectionError, http.client.HTTPException):
                self.conn = None
        raise RuntimeError("daemon unreachable")



def run_to_end(c, agent, session, argv):
    """process.start, then process.wait until the run has ended."""
    t = time.perf_counter()
    row = c.rpc("process.start", agent_id=agent, session_id=session,
                argv=argv)
    while row["state"] in ("starting", "running"):
        row = c.rpc("process.wait", agent_id=agent, session_id=session,
                    run_id=row["run_id"], timeout_ms=60000)
    return (time.perf_counter() - t) * 1000, row


def run_to_end_polling(c, agent, session, argv):
    """The same by polling process.get (callers before process.wait)."""
    t = time.perf_counter()
    row = c.rpc("process.start", agent_id=agent, session_id=session,
                argv=argv)
    while row["state"] in ("starting", "running"):
        row = c.rpc("process.get", agent_id=agent, session_id=session,
                    run_id=row["run_id"])
    return (time.perf_counter() - t) * 1000, row


def exit_to_notice(c, current):
    """A run records its exit time and exits; returns how long after that
    the process.wait reply and the SSE `end` event arrived (ms)."""
    stamp = os.path.join(current, ".exit_ns")
    row = c.rpc("process.start", agent_id="bench", session_id="s",
                argv=["sh", "-c", "sleep 0.05; date +%s%N > .exit_ns"])
    rid = row["run_id"]
    got = {}
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(f"GET /v1/stream?agent_id=bench&session_id=s&run_id={rid} "
                 f"HTTP/1.1\r\nHost: x\r\n\r\n".encode())

    def read_stream():
        buf = b""
        while b"event: end" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
        got["sse"] = time.time_ns()

    reader = threading.Thread(target=read_stream)
    reader.start()
    waiter = Client()
    waiter.rpc("process.wait", agent_id="bench", session_id="s", run_id=rid,
               timeout_ms=60000)
    got["wait"] = time.time_ns()
    reader.join(30)
    sock.close()
    exited = int(open(stamp).read())
    return ((got["wait"] - exited) / 1e6, (got["sse"] - exited) / 1e6)


try:
    c = Client()
    # Creating and formatting the 8 GiB image can take seconds on a busy
    # machine: wait up to 60 s for the daemon to answer.
    deadline = time.monotonic() + 60
    while True:
        try:
            c.rpc("agent.list")
            break
        except Exception:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise
            time.sleep(0.01)
    c.rpc("session.create", agent_id="bench", session_id="s")
    current = os.path.join(root, "agents/bench/workspace/sessions/s/current")
    shared = os.path.join(root, "agents/bench/workspace/shared")
    print(f"## Run {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, "
          f"{SAMPLES} samples, times in ms (p50 / p99)\n")

    for _ in range(3):
        run_to_end(c, "bench", "s", ["/bin/true"])
    rpc = p50_p99([run_to_end(c, "bench", "s", ["/bin/true"])[0]
               for _ in range(SAMPLES)])
    polled = p50_p99([run_to_end_polling(c, "bench", "s", ["/bin/true"])[0]
                  for _ in range(SAMPLES)])
    # The daemon's sandbox, built by hand: the same mounts (the event
    # endpoint and its client too), the syscall filter and the sandbox
    # user (our init becomes it with the three capabilities it is given).
    import pwd
    user = pwd.getpwnam("allox-sandbox")
    turn_bin = os.path.join(build, "bin", "allox-turn")
    share_bin = os.path.join(build, "bin", "allox-share")

    # The bare variant runs as root: a workspace of root's of its own.
    bare_ws = tempfile.mkdtemp(prefix="allox-bench-bare-")
    # Our init records the final status as the daemon's runs have it do
    # (the daemon passes the run's `exit` file as fd 3).
    status_fd = os.open(os.path.join(bare_ws, "exit"),
                        os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)

    def sandbox(filtered, as_user):
        argv = ["bwrap", "--new-session", "--unshare-pid",
                "--unshare-ipc", "--unshare-uts", "--tmpfs", "/", "--ro-bind",
                "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink",
                "usr/sbin", "/sbin", "--symlink", "usr/lib", "/lib",
                "--symlink", "usr/lib64", "/lib64", "--ro-bind", "/etc",
                "/etc", "--dev", "/dev", "--proc", "/proc", "--bind",
                current if as_user else bare_ws, "/workspace", "--dir", "/agent", "--bind", shared,
                "/agent/shared", "--perms", "1777", "--tmpfs", "/tmp",
                "--dir", "/run/allox", "--ro-bind", init_bin,
                "/run/allox/init", "--ro-bind",
                os.path.join(work, "runs", "events.sock"),
                "/run/allox/events.sock", "--dir", "/run/allox/bin",
                "--ro-bind", turn_bin, "/run/allox/bin/allox-turn",
                "--ro-bind", share_bin, "/run/allox/bin/allox-share",
                "--remount-ro", "/", "--remount-ro", "/dev", "--cap-drop",
                "ALL", "--clearenv"]
        if as_user:
            for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):
                argv += ["--cap-add", cap]
        argv += ["--chdir", "/workspace", "--as-pid-1", "/run/allox/init"]
        if not filtered:
            argv.append("--no-syscall-filter")
        if as_user:
            argv += ["--uid", str(user.pw_uid), "--gid", str(user.pw_gid)]
        argv += ["--status-fd", str(status_fd)]
        return argv + ["--", "/bin/true"]

    def timed(argv):
        t = time.perf_counter()
        subprocess.run(argv, check=True, pass_fds=(status_fd,))
        return (time.perf_counter() - t) * 1000

    # The same sandbox without the syscall filter and the sandbox user,
    # interleaved with the full one so drift in the machine hits both.
    bwrap, bare = sandbox(True, True), sandbox(False, False)
    both = [(timed(bwrap), timed(bare)) for _ in range(SAMPLES)]
    raw = p50_p99([a for a, _ in both])
    raw_nofilter = p50_p99([b for _, b in both])
    plain = p50_p99([timed(["/bin/true"]) for _ in range(SAMPLES)])
    os.close(status_fd)
    shutil.rmtree(bare_ws, ignore_errors=True)
    print("### process.start to the final state of /bin/true\n")
    print("| what | p50 / p99 |\n|---|---|")
    print(f"| process.start + process.wait (RPC) | "
          f"{rpc[0]:.2f} / {rpc[1]:.2f} |")
    print(f"| process.start + process.get until done (RPC, polling) | "
          f"{polled[0]:.2f} / {polled[1]:.2f} |")
    print(f"| raw bwrap, same mounts, same init, filter and user "
          f"(subprocess) | {raw[0]:.2f} / {raw[1]:.2f} |")
    print(f"| raw bwrap, same, without the syscall filter and the sandbox "
          f"user | {raw_nofilter[0]:.2f} / {raw_nofilter[1]:.2f} |")
    print(f"| fork/exec of /bin/true (subprocess) | "
          f"{plain[0]:.2f} / {plain[1]:.2f} |")
    print(f"\nAdded over raw bwrap (p50): {rpc[0] - raw[0]:.2f} ms with "
          f"process.wait, {polled[0] - raw[0]:.2f} ms polling. The syscall "
          f"filter and the sandbox user add {raw[0] - raw_nofilter[0]:.2f} "
          f"ms (p50).\n")

    print("### The run's exit to the process.wait reply and the SSE end\n")
    notices = [exit_to_notice(c, current) for _ in range(SAMPLES)]
    w = p50_p99([n[0] for n in notices])
    e = p50_p99([n[1] for n in notices])
    print("| notice | p50 / p99 |\n|---|---|")
    print(f"| process.wait reply | {w[0]:.2f} / {w[1]:.2f} |")
    print(f"| SSE `event: end` | {e[0]:.2f} / {e[1]:.2f} |\n")

    print("### 50 sessions, each running a short command at the same time\n")
    for i in range(50):
        c.rpc("session.create", agent_id="par", session_id=f"s{i}")

    def one(i):
        cl = Client()
        ms, row = run_to_end(cl, "par", f"s{i}", ["sh", "-c", "echo $$"])
        return ms, row["state"]

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(50) as ex:
        results = list(ex.map(one, range(50)))
    wall = (time.perf_counter() - t0) * 1000
    lat = p50_p99([ms for ms, _ in results])
    errors = sum(1 for _, state in results if state != "completed")
    print(f"| runs | errors | p50 / p99 | wall time |\n|---|---|---|---|")
    print(f"| 50 | {errors} | {lat[0]:.1f} / {lat[1]:.1f} | {wall:.0f} ms |\n")

    print("### session.rollback with kill_processes of a 100-process tree\n")
    c.rpc("checkpoint.create", agent_id="bench", session_id="s",
          checkpoint_id="k")
    group = os.path.join(cg_root, "agents/bench/sessions/s")
    kills = []
    for _ in range(20):
        c.rpc("process.start", agent_id="bench", session_id="s",
              argv=["sh", "-c", "for i in $(seq 100); do sleep 60 & done; wait"])
        for _ in range(1000):
            try:
                n = len(open(os.path.join(group, "cgroup.procs")).read().split())
            except OSError:
                n = 0
            if n >= 101:
                break
            time.sleep(0.005)
        t = time.perf_counter()
        r = c.rpc("session.rollback", agent_id="bench", session_id="s",
                  checkpoint_id="k", kill_processes=True)
        kills.append((time.perf_counter() - t) * 1000)
        assert len(r["terminated_process_runs"]) == 1, r
    k = p50_p99(kills)
    print(f"| processes killed per rollback | samples | p50 / p99 |")
    print(f"|---|---|---|\n| {n} | {len(kills)} | {k[0]:.1f} / {k[1]:.1f} |")
finally:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    subprocess.run(["umount", root], stderr=subprocess.DEVNULL)
    subprocess.run(["find", cg_root, "-depth", "-type", "d", "-exec", "rmdir",
                    "{}", ";"], stderr=subprocess.DEVNULL)
    shutil.rmtree(work, ignore_errors=True)
