#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The E2B front through the real e2b SDK (docs/benchmarks.md, "E2B").

Starts a daemon on a fresh loop-backed store with tracked execution and
runs bench/e2b_sdk.mjs against it: Sandbox.create + the first
commands.run('true'); commands.run('true') against native process.start +
process.wait of the same argv; files.write/read of a big file against dd
(with fsync) into the same store and out of it; fork({count: 10})
against 10 sequential session.fork (BENCH_FORK_ROUNDS, default 5).
Usage (root): bench/e2b.py [build-dir]   (default build/release; the SDK
from tests/fronts/e2b/sdk, installed with npm ci)
"""
import os, subprocess, sys

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
    subprocess.run(["node", os.path.join(here, "e2b_sdk.mjs")], env=env,
                   check=True)
finally:
    d.stop()
