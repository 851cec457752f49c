#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Proxy network mode benchmarks (docs/benchmarks.md, "Proxy network").

Against the daemon on a fresh loop-backed store, with a test server on
this machine's loopback (nothing leaves the machine):
  - one 1 GiB download from inside a sandbox: through the session's proxy
    (CONNECT tunnel, relayed by the egress broker) against a direct
    connection from a sandbox in `inherit` mode, same client, interleaved;
  - 200 connections at once through one broker, each echoing 64 KiB,
    against the same 200 made directly.
Usage (root): bench/proxy.py [build-dir]   (default build/release)
Environment: BENCH_ROUNDS (default 11).
"""
import os, socket, socketserver, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import Daemon

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build", "release")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "11"))
GIB = 1 << 30

# -- the test servers (loopback, this process) --------------------------------

ZEROS = memoryview(bytes(8 << 20))


class Bulk(socketserver.BaseRequestHandler):
    """Reads one line, sends 1 GiB, closes."""
    def handle(self):
        self.request.recv(64)
        left = GIB
        while left:
            n = min(left, len(ZEROS))
            self.request.sendall(ZEROS[:n])
            left -= n


class Echo(socketserver.BaseRequestHandler):
    """Echoes 64 KiB."""
    def handle(self):
        got = b""
        while len(got) < 65536:
            chunk = self.request.recv(65536 - len(got))
            if not chunk:
                return
            got += chunk
        self.request.sendall(got)


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024


bulk = Server(("127.0.0.1", 0), Bulk)
echo = Server(("127.0.0.1", 0), Echo)
for s in (bulk, echo):
    threading.Thread(target=s.serve_forever, daemon=True).start()
BULK_PORT = bulk.server_address[1]
ECHO_PORT = echo.server_address[1]

# -- the clients (inside sandboxes) -------------------------------------------

DOWNLOAD = r"""
import socket, sys, time
mode, port = sys.argv[1], int(sys.argv[2])
t = time.perf_counter()
if mode == "proxy":
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += s.recv(1)
    assert b" 200 " in head, head
else:
    s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"go\n")
buf = memoryview(bytearray(1 << 20))
got = 0
while True:
    k = s.recv_into(buf)
    if not k:
        break
    got += k
print(got, time.perf_counter() - t)
"""

CONCURRENT = r"""
import asyncio, sys, time
mode, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
payload = b"x" * 65536
async def one():
    t = time.perf_counter()
    if mode == "proxy":
        r, w = await asyncio.open_connection("127.0.0.1", 3128)
        w.write(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        head = await r.readuntil(b"\r\n\r\n")
        assert b" 200 " in head, head
    else:
        r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(payload)
    await w.drain()
    assert await r.readexactly(len(payload)) == payload
    w.close()
    return time.perf_counter() - t
async def main():
    t = time.perf_counter()
    lat = sorted(await asyncio.gather(*[one() for _ in range(n)]))
    total = time.perf_counter() - t
    print(total, lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))])
asyncio.run(main())
"""


def run(d, session, argv):
    row = d.rpc("process.start", agent_id="a", session_id=session, argv=argv,
                timeout=600)
    row = d.rpc("process.wait", agent_id="a", session_id=session,
                run_id=row["run_id"], timeout=600)
    out = d.rpc("process.output", agent_id="a", session_id=session,
                run_id=row["run_id"], stream="stdout")
    if row.get("root_exit_code") != 0:
        err = d.rpc("process.output", agent_id="a", session_id=session,
                    run_id=row["run_id"], stream="stderr")
        raise RuntimeError(f"{argv[:3]} failed: {err}")
    return out.get("data", out.get("text", ""))


def main():
    d = Daemon(build, "2G", execution=True)
    try:
        d.wait_ready()
        d.rpc("session.create", agent_id="a", session_id="direct")
        d.rpc("session.create", agent_id="a", session_id="proxy")
        d.rpc("session.configure", agent_id="a", session_id="proxy",
              network="proxy",
              egress={"allow": [f"127.0.0.1:{BULK_PORT}",
                                f"127.0.0.1:{ECHO_PORT}"]})
        rates = {"direct": [], "proxy": []}
        for i in range(ROUNDS):
            order = ["direct", "proxy"] if i % 2 == 0 else ["proxy", "direct"]
            for mode in order:
                got, secs = run(d, mode, ["python3", "-c", DOWNLOAD, mode,
                                          str(BULK_PORT)]).split()
                assert int(got) == GIB, got
                rates[mode].append(GIB / float(secs) / 1e6)
        med = {m: sorted(v)[len(v) // 2] for m, v in rates.items()}
        # Each round's two downloads ran back to back: their ratio is
        # less noisy than the ratio of the two medians.
        ratios = sorted(p / d for p, d in zip(rates["proxy"], rates["direct"]))
        print(f"1 GiB download, MB/s (median of {ROUNDS}): "
              f"direct {med['direct']:.0f}, proxy {med['proxy']:.0f}; "
              f"proxy/direct per round: median {ratios[len(ratios) // 2]:.2f}, "
              f"min {ratios[0]:.2f}, max {ratios[-1]:.2f}")
        print("  samples:", {m: [round(x) for x in v] for m, v in rates.items()})
        for n in (200,):
            res = {}
            for mode in ("direct", "proxy", "direct", "proxy"):
                total, p50, p99 = map(float, run(
                    d, mode, ["python3", "-c", CONCURRENT, mode,
                              str(ECHO_PORT), str(n)]).split())
                res.setdefault(mode, []).append((total, p50, p99))
            for mode, v in res.items():
                best = min(v)
                print(f"{n} connections at once, {mode}: all done in "
                      f"{best[0] * 1000:.1f} ms, per connection p50 "
                      f"{best[1] * 1000:.1f} / p99 {best[2] * 1000:.1f} ms")
        st = d.rpc("network.status", agent_id="a", session_id="proxy")
        print("network.status:", st["connections"])
    finally:
        d.stop()


main()
