// SPDX-License-Identifier: Apache-2.0
// The seccomp filter of runs, tried from a real sandbox: every filtered
// system call fails with EPERM (clone3 with ENOSYS, so the C library
// falls back to clone, which is filtered by its flags), and ordinary work
// still runs. With --syscall-filter off the same probe gets through.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace allox;
using namespace allox::test;

namespace {

// Each call made directly with its x86-64 number and harmless arguments;
// prints {name: errno (0 = it was allowed)}.
const char* probe = R"PY(
import ctypes, json, os, fcntl, struct, termios
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return 0 if r >= 0 else ctypes.get_errno()
out = {
  "bpf": sc(321, 0, 0, 0),
  "perf_event_open": sc(298, 0, 0, -1, -1, 0),
  "keyctl": sc(250, 0, 0),
  "add_key": sc(248, 0, 0, 0, 0, 0),
  "request_key": sc(249, 0, 0, 0, 0),
  "mount": sc(165, 0, 0, 0, 0, 0),
  "umount2": sc(166, 0, 0),
  "pivot_root": sc(155, 0, 0),
  "move_mount": sc(429, 0, 0, 0, 0, 0),
  "fsopen": sc(430, 0, 0),
  "setns": sc(308, -1, 0),
  "kexec_load": sc(246, 0, 0, 0, 0),
  "init_module": sc(175, 0, 0, 0),
  "finit_module": sc(313, -1, 0, 0),
  "userfaultfd": sc(323, 0),
  "io_uring_setup": sc(425, 1, 0),
  "unshare_user": sc(272, 0x10000000),
  "unshare_net": sc(272, 0x40000000),
  "clone3": sc(435, 0, 0),
}
m, s = os.openpty()
try:
    fcntl.ioctl(s, termios.TIOCSTI, b"x")
    out["tiocsti"] = 0
except OSError as e:
    out["tiocsti"] = e.errno
# Btrfs ioctls on the workspace (a subvolume the run user owns), each with
# an argument block of 4096 bytes; a name where the call takes one.
def btrfs(name, request, arg_fd=0, at=0, size=4096, subject=b""):
    buf = bytearray(size)
    fd = os.open(".", os.O_RDONLY)
    if size == 4096:
        struct.pack_into("q", buf, 0, fd if arg_fd else 0)
        buf[at:at + len(subject)] = subject
    try:
        fcntl.ioctl(fd, request, buf)
        out[name] = 0
    except OSError as e:
        out[name] = e.errno
    finally:
        os.close(fd)
btrfs("btrfs_subvol_create", 0x5000940e, at=8, subject=b"nested")
btrfs("btrfs_subvol_create_v2", 0x50009418, at=56, subject=b"nested2")
btrfs("btrfs_snap_create", 0x50009401, arg_fd=1, at=8, subject=b"snap")
btrfs("btrfs_snap_create_v2", 0x50009417, arg_fd=1, at=56, subject=b"snap2")
btrfs("btrfs_snap_destroy", 0x5000940f, at=8, subject=b"nested")
btrfs("btrfs_snap_destroy_v2", 0x5000943f, at=56, subject=b"nested2")
btrfs("btrfs_subvol_setflags", 0x4008941a, size=8)
print(json.dumps(out))
)PY";

json::object run_probe(daemon_process& d) {
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto id =
      run_id(start(c, "a", "s", json::array{"/usr/bin/python3", "-c", probe}));
  auto row = wait_done(c, "a", "s", id);
  INFO(output(c, "a", "s", id, "stderr"));
  REQUIRE(row.at("root_exit_code") == 0);
  return json::parse(output(c, "a", "s", id)).as_object();
}

} // namespace

TEST_CASE("syscall filter: each refused call fails from a real sandbox") {
  daemon_process d{with_execution()};
  d.start();
  auto r = run_probe(d);
  for (const auto& kv : r) {
    INFO(kv.key());
    if (kv.key() == "clone3")
      CHECK(kv.value() == 38); // ENOSYS
    else
      CHECK(kv.value() == 1); // EPERM
  }
  CHECK(r.size() == 27);
  // Ordinary work: threads (clone3 falls back to clone), a compile-free
  // toolchain step, files in the workspace.
  auto& c = d.client();
  auto ok = run_id(sh(c, "a", "s",
                      "/usr/bin/python3 -c 'import threading; "
                      "t=threading.Thread(target=print, args=(\"thread\",)); "
                      "t.start(); t.join()' && echo data > f && cat f"));
  auto row = wait_done(c, "a", "s", ok);
  CHECK(row.at("root_exit_code") == 0);
  CHECK(output(c, "a", "s", ok) == "thread\ndata\n");
}

TEST_CASE("syscall filter: off, the same calls are not refused by it") {
  daemon_process d{with_execution({"--syscall-filter", "off"})};
  d.start();
  auto r = run_probe(d);
  // A user namespace needs no privilege, so only the filter refused it.
  CHECK(r.at("unshare_user") == 0);
  CHECK(r.at("clone3") != 38);
  // Nor does a subvolume inside a directory the run user owns: unfiltered,
  // a run could make trees of its own in the workspace.
  CHECK(r.at("btrfs_subvol_create") == 0);
  CHECK(r.at("btrfs_snap_create_v2") == 0);
}
