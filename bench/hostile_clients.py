#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Slow and hostile HTTP clients against the daemon, one fresh daemon each:
  a. pipelining without reading: one socket sends HOSTILE_PIPELINE_MIB (64)
     MiB of pipelined keep-alive agent.list requests, then neither reads nor
     closes; daemon RSS and CPU (utime+stime) sampled every second for up to
     HOSTILE_WINDOW_S (75) s, and whether/when the daemon drops the socket;
  b. trickling: one byte of an unfinished `POST /v1/rpc` head every
     HOSTILE_TRICKLE_S (2) s; whether and when the daemon closes it (given up
     after HOSTILE_TRICKLE_LIMIT_S, 60 s: "never");
  c. connection exhaustion: with --max-connections 64, 64 held connections
     trickling a partial head, then GET /health from a new client, and 20
     GET /health on fresh connections; again after HOSTILE_HOLD_S (15) s.
Every daemon gets --idle-timeout-ms HOSTILE_IDLE_MS (60000) and the flags in
HOSTILE_DAEMON_ARGS (split on spaces, e.g. "--header-timeout-ms 10000").
Usage (root): bench/hostile_clients.py [build-dir]   (default build/release)
  ALLOX_DAEMON=/path/to/allox-workspace-daemon overrides the build dir.
"""
import http.client, json, os, random, select, shutil, signal, socket
import subprocess, sys, tempfile, threading, time

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
daemon_bin = os.environ.get("ALLOX_DAEMON") or os.path.join(
    build, "bin", "allox-workspace-daemon")
env = lambda k, d: float(os.environ.get(k, d))
IDLE_MS = int(env("HOSTILE_IDLE_MS", 60000))
EXTRA = os.environ.get("HOSTILE_DAEMON_ARGS", "").split()
PIPE_MIB, WINDOW_S = env("HOSTILE_PIPELINE_MIB", 64), env("HOSTILE_WINDOW_S", 75)
TRICKLE_S = env("HOSTILE_TRICKLE_S", 2)
TRICKLE_LIMIT_S = env("HOSTILE_TRICKLE_LIMIT_S", 60)
HOLD_S = env("HOSTILE_HOLD_S", 15)
HELD = 64
TICK = os.sysconf("SC_CLK_TCK")
GONE = select.POLLRDHUP | select.POLLERR | select.POLLHUP  # no read needed

work = tempfile.mkdtemp(prefix="allox-hostile-")
root, image = os.path.join(work, "store"), os.path.join(work, "store.img")
port = random.randint(20000, 40000)
proc = None
body = b'{"action":"agent.list","params":{}}'
REQUEST = (b"POST /v1/rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
           b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
# Long enough never to be finished by the trickle: the head has no end.
PARTIAL = (b"POST /v1/rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
           b"application/json\r\nX-Trickle: " + b"a" * 4096)


def on_signal(signum, _frame):
    raise SystemExit(128 + signum)  # so that `finally` cleans up


def start(*flags):
    global proc
    proc = subprocess.Popen(
        [daemon_bin, "--root", root, "--loop-image", image, "--loop-size",
         "8G", "--listen", f"127.0.0.1:{port}", "--idle-timeout-ms",
         str(IDLE_MS), *flags, *EXTRA],
        stdout=subprocess.DEVNULL, start_new_session=True,  # no Ctrl-C for it
        stderr=open(os.path.join(work, "daemon.log"), "a"))
    for _ in range(1000):
        if health(1)[0] == 200:
            return
        if proc.poll() is not None:
            raise RuntimeError(f"daemon exited: {work}/daemon.log")
        time.sleep(0.01)
    raise RuntimeError("daemon never answered /health")


def stop():
    """SIGTERM, then SIGKILL after 30 s; returns how long the exit took."""
    global proc
    if proc is None:
        return "not running"
    t, how = time.perf_counter(), "SIGTERM"
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            how = "SIGKILL after 30 s"
    proc = None
    # A clean exit unmounts; after SIGKILL the mount (and with it the
    # autoclear loop device) stays until we remove it.
    subprocess.run(["umount", root], stderr=subprocess.DEVNULL)
    for dev in subprocess.run(["losetup", "-nO", "NAME", "-j", image],
                              capture_output=True, text=True).stdout.split():
        subprocess.run(["losetup", "-d", dev])
    return f"{time.perf_counter() - t:.1f} s ({how})"


def rss_mib():
    for line in open(f"/proc/{proc.pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024


def cpu_s():
    rest = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICK  # utime + stime


def health(timeout=5):
    """(status or error name, ms) of GET /health on a fresh connection."""
    t = time.perf_counter()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("GET", "/health")
        status = c.getresponse().status
        c.close()
    except (OSError, http.client.HTTPException) as e:
        status = type(e).__name__
    return status, (time.perf_counter() - t) * 1000


def gone(s):
    """Has the daemon closed or reset s? poll() reports it without reading."""
    p = select.poll()
    p.register(s, GONE)
    return bool(p.poll(0))


def hard_close(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
    s.close()  # RST: the daemon learns at once, with nothing left to flush


def pipelining():
    start()
    s = socket.create_connection(("127.0.0.1", port))
    s.setblocking(False)  # the daemon may stop reading: never block on send
    chunk = REQUEST * ((1 << 20) // len(REQUEST))
    goal = int(PIPE_MIB * (1 << 20))
    st = {"sent": 0, "sent_all_s": None, "send_error": None}
    halt = threading.Event()

    def sender():
        view = memoryview(chunk)
        off = 0
        while st["sent"] < goal and not halt.is_set():
            if not select.select([], [s], [], 0.2)[1]:
                continue
            try:
                n = s.send(view[off:min(len(chunk), off + goal - st["sent"])])
            except BlockingIOError:
                continue
            except OSError as e:  # EPIPE / ECONNRESET: the daemon closed
                st["send_error"] = (type(e).__name__, time.perf_counter() - t0)
                return
            st["sent"] += n
            off = (off + n) % len(chunk)
        if st["sent"] >= goal:
            st["sent_all_s"] = time.perf_counter() - t0

    rss0, cpu0, t0 = rss_mib(), cpu_s(), time.perf_counter()
    thread = threading.Thread(target=sender, daemon=True)
    thread.start()
    samples, closed_at = [], None
    while time.perf_counter() - t0 < WINDOW_S:
        time.sleep(1)
        now = time.perf_counter() - t0
        samples.append((now, rss_mib(), cpu_s() - cpu0))
        if closed_at is None and (gone(s) or st["send_error"]):
            closed_at = now
        if closed_at is not None and now - closed_at >= 5:
            break  # closed: 5 more seconds show whether the memory returns
    probe = health()  # can anyone else still be served?
    halt.set()
    thread.join()
    hard_close(s)
    peak = max(r for _, r, _ in samples)
    return {"requests_per_mib": (1 << 20) // len(REQUEST),
            "sent_mib": round(st["sent"] / (1 << 20), 1),
            "sent_all_after_s": st["sent_all_s"] and round(st["sent_all_s"], 2),
            "window_s": round(samples[-1][0], 1),
            "rss_before_mib": round(rss0, 1),
            "rss_growth_peak_mib": round(peak - rss0, 1),
            "rss_growth_end_mib": round(samples[-1][1] - rss0, 1),
            "cpu_s_in_window": round(samples[-1][2], 2),
            "closed_after_s": round(closed_at, 1) if closed_at else "never",
            "send_error": st["send_error"] and st["send_error"][0],
            "health_during": probe,
            "samples": [[round(t, 1), round(r, 1), round(c, 2)]
                        for t, r, c in samples],
            "stop": stop()}


def trickle():
    start()
    s = socket.create_connection(("127.0.0.1", port))
    t0, sent, how, answer = time.perf_counter(), 0, None, b""
    p = select.poll()
    p.register(s, select.POLLIN | GONE)
    while time.perf_counter() - t0 < TRICKLE_LIMIT_S and how is None:
        try:
            s.send(PARTIAL[sent:sent + 1])
            sent += 1
        except OSError as e:
            how = type(e).__name__
            break
        tick_end = time.perf_counter() + TRICKLE_S
        # Nothing is due before our head ends; whatever comes is an answer
        # (e.g. 408) or the close itself.
        while how is None and (left := tick_end - time.perf_counter()) > 0:
            if p.poll(left * 1000):
                try:
                    data = s.recv(65536)
                except OSError as e:
                    how = type(e).__name__
                    break
                answer += data
                if not data:
                    how = "EOF"
    elapsed = time.perf_counter() - t0
    hard_close(s)
    return {"interval_s": TRICKLE_S, "bytes_sent": sent,
            "closed_after_s": round(elapsed, 1) if how else "never",
            "how": how or f"still open after {TRICKLE_LIMIT_S:g} s",
            "answer": answer.split(b"\r\n", 1)[0].decode(errors="replace"),
            "stop": stop()}


def exhaustion():
    start("--max-connections", str(HELD))
    held, halt = [], threading.Event()
    for _ in range(HELD):
        s = socket.create_connection(("127.0.0.1", port))
        s.send(PARTIAL[:40])
        held.append(s)
    time.sleep(0.5)  # let the daemon accept all of them

    def keep_trickling():  # a byte now and then defeats a plain idle timeout
        n = 40
        while not halt.wait(TRICKLE_S):
            for s in held:
                try:
                    s.send(PARTIAL[n:n + 1])
                except OSError:
                    pass
            n += 1

    thread = threading.Thread(target=keep_trickling, daemon=True)
    thread.start()

    def round_of_probes(label):
        first = health()
        fresh = [health() for _ in range(20)]
        ms = sorted(m for _, m in fresh)
        statuses = {}
        for st, _ in fresh:
            statuses[str(st)] = statuses.get(str(st), 0) + 1
        return {"when": label, "held_open": sum(not gone(s) for s in held),
                "new_client": [first[0], round(first[1], 1)],
                "fresh_20_statuses": statuses,
                "fresh_20_ms_p50_max": [round(ms[10], 1), round(ms[-1], 1)]}

    try:
        rounds = [round_of_probes("at once")]
        time.sleep(HOLD_S)
        rounds.append(round_of_probes(f"after {HOLD_S:g} s"))
    finally:
        halt.set()
        thread.join()
        for s in held:
            hard_close(s)
    return {"rounds": rounds, "stop": stop()}


for sig in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, on_signal)
try:
    res = {"a": pipelining(), "b": trickle(), "c": exhaustion()}
finally:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a 2nd Ctrl-C must not
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # cut the clean-up short
    stop()
    shutil.rmtree(work, ignore_errors=True)

a, b, c = res["a"], res["b"], res["c"]
print(f"## Hostile clients {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}:"
      f" {daemon_bin}\n")
print(f"--idle-timeout-ms {IDLE_MS} {' '.join(EXTRA)}\n")
rows = [
    ("a. pipelining", "MiB sent; all sent after", f"{a['sent_mib']} of "
     f"{PIPE_MIB:g}; " + ("not all" if a["sent_all_after_s"] is None
                          else f"{a['sent_all_after_s']} s")),
    ("", "RSS before / growth peak / growth at end (MiB)",
     f"{a['rss_before_mib']} / {a['rss_growth_peak_mib']} / "
     f"{a['rss_growth_end_mib']}"),
    ("", f"CPU seconds in {a['window_s']} s window", a["cpu_s_in_window"]),
    ("", "daemon closed the connection after (s)",
     f"{a['closed_after_s']} ({a['send_error'] or 'seen by poll'})"
     if a["closed_after_s"] != "never" else "never"),
    ("", "GET /health meanwhile (status, ms)",
     f"{a['health_during'][0]}, {a['health_during'][1]:.1f}"),
    ("", "daemon stop afterwards", a["stop"]),
    ("b. trickling", f"closed after (s), one byte every {TRICKLE_S:g} s",
     f"{b['closed_after_s']} ({b['how']}; {b['bytes_sent']} bytes sent)"),
    ("", "what the daemon sent", b["answer"] or "nothing"),
]
for r in c["rounds"]:
    rows += [(f"c. {HELD} held, {r['when']}", "held connections still open",
              r["held_open"]),
             ("", "new client GET /health (status, ms)",
              f"{r['new_client'][0]}, {r['new_client'][1]}"),
             ("", "20 fresh GET /health: statuses; p50 / max ms",
              f"{r['fresh_20_statuses']}; {r['fresh_20_ms_p50_max'][0]} / "
              f"{r['fresh_20_ms_p50_max'][1]}")]
print("| test | figure | value |\n|---|---|---|")
for row in rows:
    print("| " + " | ".join(str(x) for x in row) + " |")
print("\nRSS MiB / CPU s per second of a: " + ", ".join(
    f"{t:g}s {r}/{cpu}" for t, r, cpu in a["samples"]))
print(json.dumps(res))
