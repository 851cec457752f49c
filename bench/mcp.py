#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The MCP front through the official TypeScript SDK (docs/benchmarks.md,
"MCP front").

Starts a daemon on a fresh loop-backed store with tracked execution and
runs bench/mcp_sdk.mjs against it: tools/call file_read of 4 KiB and
command_run of `sh -c true` over Streamable HTTP, each alternating with
its native RPC baseline of the same run (file.read; process.start +
process.wait + process.output of stdout and stderr, what a native client
needs for the same answer), from the same Node process.
Usage (root): bench/mcp.py [build-dir]   (default build/release; the SDK
from tests/fronts/mcp/sdk, installed with npm ci; BENCH_SAMPLES)
"""
import os, subprocess, sys

from benchlib import Daemon

here = os.path.dirname(os.path.abspath(__file__))
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build",
                                                           "release")
d = Daemon(build, "4G", execution=True)
try:
    d.wait_ready()
    env = dict(os.environ, ALLOX_URL=f"http://127.0.0.1:{d.port}",
               MCP_SDK_DIR=os.path.join(here, "..", "tests", "fronts", "mcp",
                                        "sdk"))
    subprocess.run(["node", os.path.join(here, "mcp_sdk.mjs")], env=env,
                   check=True)
finally:
    d.stop()
