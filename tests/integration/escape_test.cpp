// SPDX-License-Identifier: Apache-2.0
// Escape attempts, each made by a real program inside a real sandbox, and
// shown to fail. (A first part of the suite; see docs/rpc.md.)
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/session_files.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <thread>
#include <unistd.h>

using namespace allox;
using namespace allox::test;

namespace {

/// Runs `script` in a/s and returns its stdout once it has finished.
std::string run(daemon_process& d, const std::string& a, const std::string& s,
                const std::string& script) {
  auto& c = d.client();
  auto row = expect_ok(
      c.rpc("process.start",
            with(ids(a, s), {{"argv", json::array{"sh", "-c", script}}})));
  auto id = std::string{row.at("run_id").as_string()};
  for (int i = 0; i < 1000; ++i) {
    auto r = expect_ok(c.rpc("process.get", with(ids(a, s), {{"run_id", id}})));
    if (r.at("state") != "running" && r.at("state") != "starting")
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  auto out =
      expect_ok(c.rpc("process.output", with(ids(a, s), {{"run_id", id}})));
  return std::string{out.at("data").as_string()};
}

} // namespace

TEST_CASE("escape: other workspaces, the daemon's files and its token are "
          "out of reach") {
  daemon_process d{[] {
    auto o = with_execution();
    o.token = "very-secret-token";
    return o;
  }()};
  d.start();
  auto& c = d.client();
  for (auto [a, s] : {std::pair{"a", "s"}, {"a", "sibling"}, {"b", "other"}})
    expect_ok(c.rpc("session.create", ids(a, s)));
  write_file(d.current("a", "sibling") + "/secret", "sibling");
  write_file(d.current("b", "other") + "/secret", "other agent");
  auto out =
      run(d, "a", "s",
          "for p in '" + d.current("a", "sibling") + "/secret' '" +
              d.current("b", "other") + "/secret' '" + d.root() +
              "/.allox/allox.db' '" + d.runs_dir() +
              "' /workspace/../sibling /agent/../agents; do "
              "test -e \"$p\" && echo \"visible $p\"; done; "
              // The pattern is assembled in a file, so it is not in
              // grep's own command line.
              "printf %s very-secret > /tmp/p; printf %s -token >> /tmp/p; "
              "grep -rsqf /tmp/p /proc/*/environ /proc/*/cmdline "
              "&& echo token-found; ls / ; echo end");
  CHECK(out.find("visible") == std::string::npos);
  CHECK(out.find("token-found") == std::string::npos);
  CHECK(out.find("end") != std::string::npos);
}

TEST_CASE("escape: no capabilities, no writes outside the allowed places, "
          "no signals or ptrace beyond the sandbox, no terminal") {
  daemon_process d{with_execution()};
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto out =
      run(d, "a", "s",
          "grep CapEff /proc/self/status; "
          "sh -c 'grep CapEff /proc/self/status'; "
          "for f in /usr/x /etc/x /x /bin/x /dev/x /dev/shm/x /run/x "
          "/agent/x /proc/x; do "
          "  touch $f 2>/dev/null && echo \"wrote $f\"; done; "
          "touch /workspace/ok /agent/shared/ok /tmp/ok && echo allowed; "
          "ls /proc | grep -cE '^[0-9]+$'; "
          "kill -0 1 2>/dev/null && echo pid1-signalable; "
          "test -e /proc/2/root/etc && echo sees-own; "
          "python3 - <<'PY' 2>/dev/null || echo no-tiocsti\n"
          "import fcntl, termios, os\n"
          "fd = os.open('/dev/tty', os.O_RDWR)\n"
          "fcntl.ioctl(fd, termios.TIOCSTI, b'x')\n"
          "print('tiocsti-worked')\n"
          "PY\n"
          "echo end");
  CHECK(out.find("CapEff:\t0000000000000000\nCapEff:\t0000000000000000") !=
        std::string::npos);
  CHECK(out.find("wrote") == std::string::npos);
  CHECK(out.find("allowed") != std::string::npos);
  CHECK(out.find("tiocsti-worked") == std::string::npos);
  CHECK(out.find("no-tiocsti") != std::string::npos);
  // Only the run's own processes exist in its PID namespace.
  auto procs = out.substr(out.find("allowed\n") + 8);
  CHECK(std::stoi(procs) < 10);
}

TEST_CASE("escape: processes outside the sandbox can be neither signalled "
          "nor traced") {
  daemon_process d{with_execution()};
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto me = std::to_string(::getpid()); // a host process (this test)
  auto out = run(d, "a", "s",
                 // Markers computed at run time: PID 1's cmdline (printed
                 // below) holds this script's text.
                 "kill -0 " + me +
                     " 2>/dev/null && echo \"S$((40+2))\"; "
                     "test -e /proc/" +
                     me +
                     " && echo \"V$((40+2))\"; "
                     "cat /proc/1/cmdline | tr '\\0' ' '; echo; "
                     "python3 -c 'import ctypes; l=ctypes.CDLL(None); "
                     "print(\"ptrace\", l.ptrace(16, " +
                     me + ", 0, 0))'");
  CHECK(out.find("S42") == std::string::npos);             // not signalled
  CHECK(out.find("V42") == std::string::npos);             // not visible
  CHECK(out.find("/run/allox/init") != std::string::npos); // its own PID 1
  CHECK(out.find("ptrace -1") != std::string::npos);
}

TEST_CASE("escape: hard links cannot carry workspace files into the sync "
          "from elsewhere") {
  daemon_process d{with_execution()};
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  write_file(d.root() + "/agents/a/workspace/shared/target", "shared");
  auto out = run(d, "a", "s",
                 "ln /agent/shared/target /tmp/hard 2>/dev/null "
                 "&& echo linked-tmp; "
                 "ln /etc/passwd /workspace/pw 2>/dev/null && echo linked-ws; "
                 "echo end");
  CHECK(out.find("linked-tmp") == std::string::npos); // another file system
  CHECK(out.find("linked-ws") == std::string::npos);
  CHECK(::access((d.current("a", "s") + "/.allox-tmp/hard").c_str(), F_OK) !=
        0);
}

TEST_CASE("escape: symlinks planted in /tmp or .allox-tmp never make the sync "
          "write outside .allox-tmp") {
  daemon_process d{with_execution()};
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto outside = d.root() + "/agents/a/workspace/shared/escaped";
  run(d, "a", "s",
      "ln -s /agent/shared /tmp/link-dir; ln -s /etc/passwd /tmp/link-file; "
      "ln -s /agent/shared /workspace/.allox-tmp.new; "
      "mkdir -p /tmp/d && ln -s /agent/shared/escaped /tmp/d/x; echo ok");
  auto tmp = d.current("a", "s") + "/.allox-tmp";
  struct stat st {};
  REQUIRE(::lstat((tmp + "/link-dir").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode)); // copied as a link, not followed
  CHECK(::access(outside.c_str(), F_OK) != 0);
  CHECK(::lstat((tmp + "/d/x").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  // The planted .allox-tmp.new symlink was replaced, not followed.
  CHECK(::access((d.root() + "/agents/a/workspace/shared/link-file").c_str(),
                 F_OK) != 0);
}

TEST_CASE("escape: an isolated session has no network route") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto inherit = run(d, "a", "s", "cat /proc/net/dev | tail -n +3 | wc -l");
  auto conf = expect_ok(c.rpc(
      "session.configure", with(ids("a", "s"), {{"network", " Isolated "}})));
  CHECK(conf.at("network") == "isolated");
  auto isolated =
      run(d, "a", "s", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
  CHECK(isolated == "lo\n");
  CHECK(std::stoi(inherit) >= 1);
  // The setting persists and can be reset.
  d.stop();
  d.start();
  CHECK(run(d, "a", "s",
            "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '") == "lo\n");
  auto back = expect_ok(
      c.rpc("session.configure", with(ids("a", "s"), {{"reset", true}})));
  CHECK(back.at("network") == "inherit");
  expect_error(
      c.rpc("session.configure", with(ids("a", "s"), {{"network", "bridge"}})),
      400, "invalid_argument");
}

TEST_CASE("escape: limits without their cgroup controller are refused, not "
          "silently dropped") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto status = expect_ok(c.rpc("process.status"));
  auto& controllers = status.at("cgroup_controllers").as_array();
  bool has_pids = std::find(controllers.begin(), controllers.end(),
                            json::value("pids")) != controllers.end();
  auto r =
      c.rpc("session.configure",
            with(ids("a", "s"), {{"limits", json::object{{"pids.max", 64}}}}));
  if (has_pids) {
    expect_ok(r);
  } else {
    expect_error(r, 400, "unsupported");
    CHECK(r.json.as_object().at("error").as_string().find("pids.max needs the "
                                                          "pids cgroup "
                                                          "controller") !=
          json::string::npos);
  }
  expect_error(
      c.rpc("session.configure",
            with(ids("a", "s"), {{"limits", json::object{{"swap.max", "1"}}}})),
      400, "invalid_argument");
}
