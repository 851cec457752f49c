#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The E2B front through the real e2b SDK (docs/benchmarks.md, "E2B").

Starts a daemon on a fresh loop-backed store with tracked execution and
runs bench/e2b_sdk.mjs against it: Sandbox.create + the first
commands.run('true'); commands.run('true') against native process.start +
process.wait of the same argv; files.write/read of a big file against dd
(with fsync) into the same store and out of it; fork({count: 10})
against 10 sequential session.fork (BENCH_FORK_ROUNDS, default 5); then
the create request the SDK sends, from a plain keep-alive HTTP client
(the daemon's part of Sandbox.create, without the SDK's).
Usage (root): bench/e2b.py [build-dir]   (default build/release; the SDK
from tests/fronts/e2b/sdk, installed with npm ci)
"""
import http.client, json, os, subprocess, sys, time

from benchlib import Daemon

here = os.path.dirname(os.path.abspath(__file__))
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build",
                                                           "release")
sdk = os.path.join(here, "..", "tests", "fronts", "e2b", "sdk")
# benchlib's Daemon also removes the runs' cgroups when it stops.
d = Daemon(build, "8G", execution=True)
try:
    d.wait_ready()
    base = f"http://127.0.0.1:{d.port}"
    env = dict(os.environ, E2B_API_URL=base + "/e2b",
               E2B_SANDBOX_URL=base + "/e2b/envd", E2B_API_KEY="e2b_bench",
               ALLOX_RPC=base + "/v1/rpc", E2B_SDK_DIR=sdk, BENCH_WORK=d.work,
               BENCH_STORE=d.root)
    out = json.loads(subprocess.run(
        ["node", os.path.join(here, "e2b_sdk.mjs")], env=env, check=True,
        stdout=subprocess.PIPE).stdout)
    # The daemon's part of Sandbox.create: the request the SDK sends, from
    # a plain keep-alive HTTP client (then the sandbox's DELETE).
    c = http.client.HTTPConnection("127.0.0.1", d.port)
    def call(method, path, body=None):
        c.request(method, path, body=body, headers={
            "X-API-Key": "e2b_bench", "Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read()
    created, killed = [], []
    for _ in range(int(os.environ.get("BENCH_CREATE_SAMPLES", "100")) * 2):
        t = time.perf_counter()
        status, body = call("POST", "/e2b/sandboxes", '{"templateID":"base"}')
        created.append((time.perf_counter() - t) * 1000)
        assert status == 201, body
        t = time.perf_counter()
        call("DELETE", "/e2b/sandboxes/" + json.loads(body)["sandboxID"])
        killed.append((time.perf_counter() - t) * 1000)
    def summary(xs):
        xs = sorted(xs)
        at = lambda p: round(xs[min(len(xs) - 1, int(p / 100 * len(xs)))], 2)
        return {"p50_ms": at(50), "p99_ms": at(99), "n": len(xs)}
    out["create_plain_http"] = {"create": summary(created),
                                "kill": summary(killed)}
    print(json.dumps(out, indent=2))
finally:
    d.stop()
