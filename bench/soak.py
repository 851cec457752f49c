#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Soak: one million mixed read requests against one daemon, watching RSS.

Against the daemon on a fresh loop-backed store:
  - set-up: a few agents, sessions and checkpoints;
  - warm-up (SOAK_WARMUP requests, default 100,000), then SOAK_REQUESTS
    (default 1,000,000) mixed reads over keep-alive connections with wrk:
    agent.list, session.list, session.describe, checkpoint.list,
    agent.describe, audit.list {limit:10} and GET /health;
  - daemon VmRSS after set-up, after warm-up, at the middle, at the end and
    after SOAK_IDLE_S (20) idle seconds; requests/s; non-200 answers.
Target: RSS growth from after warm-up to the end under 5 MiB.
Exits non-zero if any request failed or the run did not complete.
Usage (root): bench/soak.py [build-dir]   (default build/release)
  ALLOX_DAEMON=/path/to/allox-workspace-daemon overrides the build dir.
  SOAK_CONNECTIONS (16), SOAK_MAX_S (150: wrk's deadline for the main run).
"""
import glob, http.client, json, os, random, re, shutil, signal, subprocess
import sys, tempfile, time

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
daemon_bin = os.environ.get("ALLOX_DAEMON") or os.path.join(
    build, "bin", "allox-workspace-daemon")
TOTAL = int(os.environ.get("SOAK_REQUESTS", "1000000"))
WARMUP = int(os.environ.get("SOAK_WARMUP", "100000"))
CONNS = int(os.environ.get("SOAK_CONNECTIONS", "16"))
MAX_S = int(os.environ.get("SOAK_MAX_S", "150"))
IDLE_S = float(os.environ.get("SOAK_IDLE_S", "20"))
THREADS = 2  # one per core; wrk shares the machine with the daemon
AGENTS, SESSIONS, CHECKPOINTS = 3, 3, 2

work = tempfile.mkdtemp(prefix="allox-soak-")
root, image = os.path.join(work, "store"), os.path.join(work, "store.img")
port = random.randint(20000, 40000)
proc = wrk = None


def on_signal(signum, _frame):
    # SIGTERM/SIGHUP would otherwise kill us without running `finally`.
    raise SystemExit(128 + signum)


def rss_kib():
    for line in open(f"/proc/{proc.pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])


def rpc(conn, action, **params):
    conn.request("POST", "/v1/rpc", json.dumps({"action": action,
                                                "params": params}))
    r = json.loads(conn.getresponse().read())
    if not r.get("ok"):
        raise RuntimeError(f"{action}: {r}")
    return r["result"]


def lua_script(prefix):
    """wrk script: rotates the read mix; each thread stops after `share`
    answers and writes its progress to <prefix><id> (every 10,000 answers,
    and "done" at the end) so that we can sample RSS at the middle and
    interrupt wrk as soon as all threads are done (wrk itself would sleep
    until -d runs out)."""
    a = [f"a{i}" for i in range(AGENTS)]
    bodies = [{"action": "agent.list", "params": {}},
              {"action": "audit.list", "params": {"limit": 10}}]
    for ag in a:
        bodies.append({"action": "agent.describe", "params": {"agent_id": ag}})
        bodies.append({"action": "session.list", "params": {"agent_id": ag}})
        for s in range(SESSIONS):
            p = {"agent_id": ag, "session_id": f"s{s}"}
            bodies.append({"action": "session.describe", "params": p})
            bodies.append({"action": "checkpoint.list", "params": p})
    # GET /health about as often as each kind of RPC.
    reqs = [f"{{'POST', '/v1/rpc', {json.dumps(json.dumps(b))}}}"
            for b in bodies] + ["{'GET', '/health', nil}"] * 2
    return f"""
local reqs = {{ {", ".join(reqs)} }}
local count = 0
function setup(thread)
  thread:set("id", count)
  count = count + 1
end
function init(args)
  share = tonumber(args[1])
  n, bad, i = 0, 0, id * 5
  wrk.headers["Content-Type"] = "application/json"
  prepared = {{}}
  for k, r in ipairs(reqs) do prepared[k] = wrk.format(r[1], r[2], nil, r[3]) end
end
function request()
  i = i + 1
  return prepared[i % #prepared + 1]
end
local function report(state)
  local f = io.open("{prefix}" .. id, "w")
  f:write(state, " ", n, " ", bad, "\\n")
  f:close()
end
function response(status, headers, body)
  n = n + 1
  if status ~= 200 then bad = bad + 1 end
  if n >= share then
    report("done")
    wrk.thread:stop()
  elseif n % 10000 == 0 then
    report("run")
  end
end
"""


def progress(prefix):
    done, n, bad = 0, 0, 0
    for path in glob.glob(prefix + "*"):
        try:
            state, a, b = open(path).read().split()
        except ValueError:  # caught mid-write
            continue
        done += state == "done"
        n += int(a)
        bad += int(b)
    return done, n, bad


def drive(name, total, deadline_s, on_half=None):
    """Runs wrk until `total` answers (or the deadline); returns a dict."""
    global wrk
    prefix = os.path.join(work, f"{name}-progress-")
    script = os.path.join(work, f"{name}.lua")
    open(script, "w").write(lua_script(prefix))
    share = -(-total // THREADS)
    t0 = time.perf_counter()
    wrk = subprocess.Popen(
        ["wrk", f"-t{THREADS}", f"-c{CONNS}", f"-d{deadline_s}s", "--latency",
         "-s", script, f"http://127.0.0.1:{port}/v1/rpc", "--", str(share)],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    half = None
    while wrk.poll() is None:
        done, n, _ = progress(prefix)
        if on_half and half is None and n >= total // 2:
            half = on_half()
        if done == THREADS:
            wrk.send_signal(signal.SIGINT)  # wrk prints its summary and exits
            break
        time.sleep(0.02)
    elapsed = time.perf_counter() - t0
    out = wrk.communicate(timeout=30)[0]
    wrk = None
    done, n, bad = progress(prefix)
    errs = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                     r"timeout (\d+)", out)
    lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
    return {"requests": n, "non_200": bad, "complete": done == THREADS,
            "socket_errors": sum(map(int, errs.groups())) if errs else 0,
            "seconds": elapsed, "per_second": n / elapsed,
            "p50": lat.get("50", "?"), "p99": lat.get("99", "?"), "half": half}


for s in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, on_signal)
status = 1
try:
    # Own session: a Ctrl-C reaches only us, and `finally` stops the daemon
    # in order (it unmounts its store on SIGTERM).
    proc = subprocess.Popen(
        [daemon_bin, "--root", root, "--loop-image", image, "--loop-size",
         "8G", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, start_new_session=True,
        stderr=open(os.path.join(work, "daemon.log"), "w"))
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(1000):
        try:
            rpc(c, "agent.list")
            break
        except (OSError, http.client.HTTPException):
            if proc.poll() is not None:
                raise RuntimeError("daemon exited; see " + work)
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            time.sleep(0.01)
    for a in range(AGENTS):
        rpc(c, "agent.create", agent_id=f"a{a}")
        for s in range(SESSIONS):
            rpc(c, "session.create", agent_id=f"a{a}", session_id=f"s{s}")
            for k in range(CHECKPOINTS):
                rpc(c, "checkpoint.create", agent_id=f"a{a}",
                    session_id=f"s{s}", message=f"soak {k}")
    c.close()
    time.sleep(1)  # let the set-up's deferred commits settle
    rss = {"start": rss_kib()}
    warm = drive("warmup", WARMUP, 60)
    warm.pop("half")
    rss["after_warmup"] = rss_kib()
    main = drive("main", TOTAL, MAX_S, on_half=rss_kib)
    rss["middle"] = main.pop("half")
    rss["end"] = rss_kib()
    time.sleep(IDLE_S)
    rss["idle"] = rss_kib()

    growth = (rss["end"] - rss["after_warmup"]) / 1024
    failed = (warm["non_200"] + warm["socket_errors"] + main["non_200"] +
              main["socket_errors"])
    ok = failed == 0 and warm["complete"] and main["complete"]
    print(f"## Soak {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}: "
          f"{daemon_bin}\n")
    print(f"{AGENTS} agents x {SESSIONS} sessions x {CHECKPOINTS} checkpoints;"
          f" wrk -t{THREADS} -c{CONNS}, keep-alive\n")
    print("| phase | requests | non-200 | socket errors | requests/s | "
          "p50 | p99 |\n|---|---|---|---|---|---|---|")
    for label, r in (("warm-up", warm), ("soak", main)):
        print(f"| {label} | {r['requests']:,} | {r['non_200']} | "
              f"{r['socket_errors']} | {r['per_second']:,.0f} | {r['p50']} | "
              f"{r['p99']} |")
    print("\n| daemon VmRSS | MiB |\n|---|---|")
    for label, key in (("after set-up", "start"),
                       ("after warm-up", "after_warmup"),
                       (f"middle (~{TOTAL // 2:,})", "middle"),
                       ("end", "end"), (f"after {IDLE_S:g} s idle", "idle")):
        print(f"| {label} | {rss[key] / 1024:.1f} |")
    verdict = "PASS" if growth < 5 else "FAIL"
    print(f"\nGrowth after warm-up to end: {growth:.1f} MiB "
          f"(target < 5 MiB): {verdict}")
    if not ok:
        print(f"FAILED requests: {failed}; complete: "
              f"{warm['complete'] and main['complete']}")
    print(json.dumps({"rss_kib": rss, "growth_mib": round(growth, 2),
                      "growth_target": verdict, "warmup": warm, "soak": main,
                      "failed_requests": failed}))
    status = 0 if ok else 1
finally:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a 2nd Ctrl-C must not
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # cut the clean-up short
    if wrk is not None and wrk.poll() is None:
        wrk.kill()
        wrk.wait()
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # The daemon unmounts on a clean exit; after a crash or SIGKILL the mount
    # stays, and the loop device (autoclear) goes only with it.
    subprocess.run(["umount", root], stderr=subprocess.DEVNULL)
    for dev in subprocess.run(["losetup", "-nO", "NAME", "-j", image],
                              capture_output=True, text=True).stdout.split():
        subprocess.run(["losetup", "-d", dev])
    shutil.rmtree(work, ignore_errors=True)
sys.exit(status)
