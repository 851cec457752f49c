#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The E2B front through the real e2b SDK (docs/benchmarks.md, "E2B").

Starts a daemon on a fresh loop-backed store with tracked execution and
runs bench/e2b_sdk.mjs against it: Sandbox.create + the first
commands.run('true'); commands.run('true') against native process.start +
process.wait of the same argv; files.write/read of a big file against dd
(with fsync) into the same store and out of it.
Usage (root): bench/e2b.py [build-dir]   (default build/release; the SDK
from tests/fronts/e2b/sdk, installed with npm ci)
"""
import os, random, shutil, subprocess, sys, tempfile, time, urllib.request

here = os.path.dirname(os.path.abspath(__file__))
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build",
                                                           "release")
sdk = os.path.join(here, "..", "tests", "fronts", "e2b", "sdk")
work = tempfile.mkdtemp(prefix="allox-bench-")
root = os.path.join(work, "store")
port = random.randint(20000, 40000)
v2 = next(l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2")
proc = subprocess.Popen(
    [os.path.join(build, "bin", "allox-workspace-daemon"), "--root", root,
     "--loop-image", os.path.join(work, "store.img"), "--loop-size", "8G",
     "--listen", f"127.0.0.1:{port}",
     "--process-audit-root", os.path.join(work, "runs"),
     "--process-cgroup-root", os.path.join(v2, os.path.basename(work)),
     "--sandbox-init", os.path.join(build, "bin", "allox-sandbox-init")],
    stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "daemon.log"), "w"))
try:
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(base + "/health", timeout=1)
            break
        except OSError:
            time.sleep(0.05)
    env = dict(os.environ, E2B_API_URL=base + "/e2b",
               E2B_SANDBOX_URL=base + "/e2b/envd", E2B_API_KEY="e2b_bench",
               ALLOX_RPC=base + "/v1/rpc", E2B_SDK_DIR=sdk, BENCH_WORK=work,
               BENCH_STORE=root)
    subprocess.run(["node", os.path.join(here, "e2b_sdk.mjs")], env=env,
                   check=True)
finally:
    proc.terminate()
    proc.wait(30)
    shutil.rmtree(work, ignore_errors=True)
