// SPDX-License-Identifier: Apache-2.0
// The current context (use, current, clear) and what session commands make
// of it; the one-line failures and their exit codes.
#include "tests/cli/ctl.hpp"
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/session_files.hpp"

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>

using namespace allox;
using namespace allox::test;

TEST_CASE("context: session commands follow use, and --agent/--session "
          "override it") {
  daemon_process d{with_token("secret")};
  d.start();
  ctl_process c{"http://127.0.0.1:" + std::to_string(d.port())};
  // No token: the daemon's 401, exit 1.
  auto denied = c.run({"agent", "list"});
  CHECK(denied.code == 1);
  CHECK(denied.err == "alloxctl: error: unauthorized (code: unauthorized)\n");
  c.env["ALLOX_WORKSPACE_TOKEN"] = "secret";
  for (const char* s : {"s1", "s2"})
    REQUIRE(c.run({"session", "create", "--agent", "a", s}).code == 0);
  // Without a context a session command says what to do.
  auto none = c.run({"checkpoint", "list"});
  CHECK(none.code == 2);
  CHECK(none.err.find("alloxctl use AGENT/SESSION") != std::string::npos);
  CHECK(c.run({"current"}).code == 2);

  REQUIRE(c.run({"use", "a/s1"}).code == 0);
  CHECK(c.run({"current"}).out == "a/s1  (profile default)\n");
  REQUIRE(c.run({"checkpoint", "create", "one"}).code == 0);
  REQUIRE(c.run({"use", "a/s2"}).code == 0);
  REQUIRE(c.run({"checkpoint", "create", "two"}).code == 0);
  auto ids = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"-o", "json"});
    auto r = c.run(args);
    REQUIRE(r.code == 0);
    auto v = json::parse(r.out);
    const auto& o = v.as_object();
    return json::serialize(o.at("checkpoint_ids"));
  };
  CHECK(ids({"session", "describe"}) == R"(["two"])");
  CHECK(ids({"session", "describe", "s1"}) == R"(["one"])");
  CHECK(ids({"checkpoint", "list", "--session", "s1"}) == R"(["one"])");
  CHECK(ids({"--agent", "a", "--session", "s1", "session", "describe"}) ==
        R"(["one"])");
  // The context lives in the profile of the configuration file.
  CHECK(read_file(c.config_path()).find("session = \"s2\"") !=
        std::string::npos);
  // Profiles keep their own contexts.
  REQUIRE(c.run({"--profile", "other", "use", "a/s1"}).code == 0);
  CHECK(c.run({"--profile", "other", "current"}).out ==
        "a/s1  (profile other)\n");
  CHECK(c.run({"current"}).out == "a/s2  (profile default)\n");
  REQUIRE(c.run({"clear"}).code == 0);
  CHECK(c.run({"checkpoint", "list"}).code == 2);
  CHECK(c.run({"use", "../x"}).code == 2);
}

TEST_CASE("context: failures are one line with documented exit codes") {
  daemon_process d;
  d.start();
  ctl_process c{"http://127.0.0.1:" + std::to_string(d.port())};
  REQUIRE(c.run({"use", "a/s"}).code == 0);
  auto missing = c.run({"session", "describe"});
  CHECK(missing.code == 1);
  CHECK(missing.err ==
        "alloxctl: error: session does not exist: a/s (code: not_found)\n");
  CHECK(missing.out.empty());
  // Forking a session that does not exist: the daemon's error.
  auto fork = c.run({"session", "fork", "s2"});
  CHECK(fork.code == 1);
  CHECK(fork.err.find("(code: not_found)") != std::string::npos);
  // A file of a session that does not exist: the daemon's error.
  auto cat = c.run({"file", "cat", "a.txt"});
  CHECK(cat.code == 1);
  CHECK(cat.err.find("(code: not_found)") != std::string::npos);
  // Turn and policy commands reach the daemon: its error, one line.
  for (auto args : std::vector<std::vector<std::string>>{{"turn", "start"},
                                                         {"policy", "get"}}) {
    auto r = c.run(args);
    CHECK(r.code == 1);
    CHECK(r.err.find("(code: not_found)") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  // Tracking is off on this daemon: tracker.status says so.
  auto tracker = c.run({"-o", "json", "tracker", "status"});
  CHECK(tracker.code == 0);
  CHECK(tracker.out.find("\"backend\"") != std::string::npos);
  // The metrics pass through as the daemon wrote them (values change from
  // run to run, so no golden file).
  auto metrics = c.run({"metrics"});
  CHECK(metrics.code == 0);
  CHECK(metrics.out.find("# TYPE allox_rpc_requests_total counter") !=
        std::string::npos);
  // process.* without tracked execution: the daemon's unsupported code.
  auto run = c.run({"run", "--", "true"});
  CHECK(run.code == 1);
  CHECK(run.err.find("(code: unsupported)") != std::string::npos);
  // Nobody listening: one line, exit 3.
  ctl_process gone{"http://127.0.0.1:" + std::to_string(free_port())};
  auto r = gone.run({"agent", "list"});
  CHECK(r.code == 3);
  CHECK(r.err.rfind("alloxctl: cannot reach the daemon at http://127.0.0.1:",
                    0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  // Usage errors: 2.
  CHECK(gone.run({"agent", "create"}).code == 2);
  CHECK(gone.run({"no-such-command"}).code == 2);
  CHECK(gone.run({"--url", "https://x", "agent", "list"}).code == 3);
}

TEST_CASE("context: checkpoint watch prints changes until Ctrl-C") {
  daemon_process d;
  d.start();
  ctl_process c{"http://127.0.0.1:" + std::to_string(d.port())};
  REQUIRE(c.run({"session", "create", "--agent", "a", "s"}).code == 0);
  REQUIRE(c.run({"use", "a/s"}).code == 0);
  REQUIRE(c.run({"checkpoint", "create", "c1"}).code == 0);
  ctl_process w{"http://127.0.0.1:" + std::to_string(d.port())};
  w.start({"-o", "json", "--agent", "a", "--session", "s", "checkpoint",
           "watch", "--interval", "0.1"});
  CHECK(w.read_until(R"("event":"head")", std::chrono::seconds{10})
            .find(R"({"event":"exists","checkpoint_id":"c1")") !=
        std::string::npos);
  REQUIRE(c.run({"checkpoint", "create", "c2", "-m", "next"}).code == 0);
  auto seen =
      w.read_until(R"("checkpoint_id":"c2"})", std::chrono::seconds{10});
  CHECK(seen.find(R"({"event":"created","checkpoint_id":"c2","parent_id":"c1",)"
                  R"("message":"next","pinned":false})") != std::string::npos);
  w.signal(SIGINT);
  auto r = w.finish(std::chrono::seconds{10});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
}

TEST_CASE("context: files go up and come down byte for byte") {
  daemon_process d;
  d.start();
  ctl_process c{"http://127.0.0.1:" + std::to_string(d.port())};
  REQUIRE(c.run({"session", "create", "--agent", "a", "s"}).code == 0);
  REQUIRE(c.run({"use", "a/s"}).code == 0);
  test::temp_dir local;
  std::string bin;
  for (int i = 0; i < 70000; ++i)
    bin += static_cast<char>(i * 7 % 256);
  test::write_file(local / "blob", bin);
  ::mkdir((local / "tree").c_str(), 0755);
  ::mkdir((local / "tree/sub").c_str(), 0755);
  test::write_file(local / "tree/sub/x.txt", "x");
  test::write_file(local / "tree/y.txt", "y");
  CHECK(c.run({"file", "upload", local / "blob", "--path", "blob"}).code == 0);
  CHECK(
      c.run({"file", "upload", local / "tree", "--path", "tree", "-r"}).code ==
      0);
  CHECK(c.run({"file", "write", "note.txt", "--data", "hello"}).code == 0);
  auto cat = c.run({"file", "cat", "note.txt"});
  CHECK(cat.code == 0);
  CHECK(cat.out.find("hello") != std::string::npos);
  CHECK(test::read_file(d.current("a", "s") + "/blob") == bin);
  CHECK(test::read_file(d.current("a", "s") + "/tree/sub/x.txt") == "x");
  CHECK(c.run({"file", "download", "blob", "--to", local / "back"}).code == 0);
  CHECK(test::read_file(local / "back") == bin);
  // One file goes through the bulk endpoint (PUT/GET /v1/files/...).
  auto ops = [&](const char* op) {
    return test::audit_ops(d.client(), {{"agent_id", "a"}, {"op", op}});
  };
  // So do trees: one tar stream each way.
  CHECK(ops("file.upload").size() == 2);
  CHECK(ops("file.download").size() == 1);
  auto down =
      c.run({"file", "download", "tree", "--to", local / "tree2", "-r"});
  INFO(down.err);
  CHECK(down.code == 0);
  CHECK(ops("file.download").size() == 2);
  CHECK(test::read_file(local / "tree2/sub/x.txt") == "x");
  CHECK(test::read_file(local / "tree2/y.txt") == "y");
}

TEST_CASE("context: an upload the daemon refuses says why, though its body "
          "was still being sent") {
  daemon_process d{test::with_args({"--max-upload-bytes", "1048576"})};
  d.start();
  ctl_process c{"http://127.0.0.1:" + std::to_string(d.port())};
  REQUIRE(c.run({"session", "create", "--agent", "a", "s"}).code == 0);
  test::temp_dir local;
  // Far more than the socket buffers hold: the daemon answers 413 after
  // the head and closes while the file is still going out.
  test::write_file(local / "big", std::string(32 << 20, 'b'));
  auto up = c.run({"file", "upload", local / "big", "--path", "big",
                   "--agent", "a", "--session", "s"});
  INFO(up.err);
  CHECK(up.code == 1);
  CHECK(up.err.find("larger than the limit") != std::string::npos);
}
