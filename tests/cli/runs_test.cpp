// SPDX-License-Identifier: Apache-2.0
// alloxctl run, logs -f and Ctrl-C against a daemon with tracked
// execution: output streams while the run lives, the exit code is the
// run's, Ctrl-C stops the run.
#include "tests/cli/ctl.hpp"
#include "tests/fixtures/daemon.hpp"

#include <doctest/doctest.h>

#include <signal.h>

using namespace allox;
using namespace allox::test;
using namespace std::chrono_literals;

namespace {

std::string url(const daemon_process& d) {
  return "http://127.0.0.1:" + std::to_string(d.port());
}

/// Session a/s, made the context of `c`.
void use_session(ctl_process& c) {
  REQUIRE(c.run({"session", "create", "--agent", "a", "s"}).code == 0);
  REQUIRE(c.run({"use", "a/s"}).code == 0);
}

} // namespace

TEST_CASE("runs: run exits with the run's exit code and keeps stdout and "
          "stderr apart") {
  daemon_process d{with_execution()};
  d.start();
  ctl_process c{url(d)};
  use_session(c);
  auto status = c.run({"-o", "json", "process", "status"});
  CHECK(status.code == 0);
  CHECK(status.out.find(R"("execution_enabled": true)") != std::string::npos);
  auto ok = c.run({"run", "--", "sh", "-c", "echo out; echo err >&2"});
  CHECK(ok.code == 0);
  CHECK(ok.out == "out\n");
  CHECK(ok.err == "err\n");
  CHECK(c.run({"run", "--", "sh", "-c", "exit 7"}).code == 7);
  CHECK(c.run({"run", "--", "false"}).code == 1);
  // The sandbox's environment and the run's own.
  auto env = c.run({"run", "--env", "GREETING=hi", "--", "sh", "-c",
                    "echo $GREETING $ALLOX_SESSION_ID"});
  CHECK(env.out == "hi s\n");
  // Stopped by the daemon's timeout: 124, with one line on stderr.
  auto slow = c.run({"run", "--timeout", "0.5", "--", "sleep", "30"});
  CHECK(slow.code == 124);
  CHECK(slow.err.find("stopped (timeout)") != std::string::npos);
  // A malformed --env never reaches the daemon: exit 2.
  CHECK(c.run({"run", "--env", "=x", "--", "true"}).code == 2);
  // What the daemon refuses: its message and code, exit 1.
  auto bad = c.run({"run", "--timeout", "100000", "--", "true"});
  CHECK(bad.code == 1);
  CHECK(bad.err == "alloxctl: error: timeout must be in (0, 86400] seconds "
                   "(code: invalid_argument)\n");
}

TEST_CASE("runs: output appears while the run is still running") {
  daemon_process d{with_execution()};
  d.start();
  ctl_process c{url(d)};
  use_session(c);
  auto t0 = std::chrono::steady_clock::now();
  c.start({"run", "--", "sh", "-c", "echo first; sleep 3; echo second"});
  auto seen = c.read_until("first\n", 10s);
  auto waited = std::chrono::steady_clock::now() - t0;
  CHECK(seen == "first\n");
  // Well before the run's 3 s sleep ends.
  CHECK(waited < 2500ms);
  ctl_process ps{url(d)};
  auto rows = ps.run({"-o", "json", "--agent", "a", "--session", "s", "ps"});
  CHECK(rows.out.find(R"("state": "running")") != std::string::npos);
  auto r = c.finish(20s);
  CHECK(r.code == 0);
  CHECK(r.out == "first\nsecond\n");
}

TEST_CASE("runs: Ctrl-C stops the run, shows what it wrote, and exits 130") {
  daemon_process d{with_execution()};
  d.start();
  ctl_process c{url(d)};
  use_session(c);
  c.start({"run", "--", "sh", "-c", "echo ready; sleep 60"});
  REQUIRE(c.read_until("ready\n", 10s) == "ready\n");
  c.signal(SIGINT);
  auto r = c.finish(30s);
  CHECK(r.code == 130);
  CHECK(r.err.find("stopped (requested)") != std::string::npos);
  auto rows = c.run({"-o", "json", "ps"});
  CHECK(rows.out.find(R"("state": "stopped")") != std::string::npos);
  CHECK(rows.out.find(R"("state": "running")") == std::string::npos);
}

TEST_CASE("runs: logs -f follows a run started elsewhere to its end") {
  daemon_process d{with_execution()};
  d.start();
  ctl_process c{url(d)};
  use_session(c);
  auto started = c.run({"-o", "json", "run", "-d", "--", "sh", "-c",
                        "echo a; sleep 1; echo b >&2; echo c"});
  REQUIRE(started.code == 0);
  auto id = std::string{
      json::parse(started.out).as_object().at("run_id").as_string()};
  auto f = c.run({"logs", id, "-f"});
  CHECK(f.code == 0);
  CHECK(f.out == "a\nc\n");
  CHECK(f.err == "b\n");
  auto whole = c.run({"logs", id});
  CHECK(whole.out == "a\nc\n");
}
