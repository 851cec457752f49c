// SPDX-License-Identifier: Apache-2.0
// Tracked execution on the real kernel: Bubblewrap sandboxes in the
// session's cgroup v2 group (the prototype's sandbox and kernel tests
// without eBPF).
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/session_files.hpp"
#include "tests/fixtures/wait.hpp"

#include "guest/os/cgroup.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <future>
#include <set>
#include <thread>

using namespace allox;
using namespace allox::test;

TEST_CASE("process: disabled without an audit root") {
  daemon_process d;
  d.start();
  auto status = expect_ok(d.client().rpc("process.status"));
  CHECK(status == json::object{{"enabled", false}, {"backend", "disabled"}});
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto r = d.client().rpc("process.start",
                          with(ids("a", "s"), {{"argv", json::array{"true"}}}));
  expect_error(r, 400, "unsupported");
  CHECK(r.json.as_object().at("error") ==
        "process tracking is not enabled on this daemon");
}

TEST_CASE("process: the sandbox as the prototype's tests see it") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto status = expect_ok(c.rpc("process.status"));
  CHECK(status.at("execution_enabled") == true);
  CHECK(status.at("isolation") == "bubblewrap");
  auto row = sh(c, "a", "s",
                "pwd; echo $HOME $TMPDIR $ALLOX_AGENT_ID $ALLOX_SESSION_ID "
                "$ALLOX_AGENT_SHARED; test -d /proc/self && echo proc; "
                "test -e /sys/fs/cgroup || echo nocgroup; "
                "ls /agent; echo err >&2",
                {{"env", json::object{{"HOME", "/evil"},
                                      {"ALLOX_SESSION_ID", "spoof"},
                                      {"EXTRA", "x"}}}});
  CHECK(row.at("state") == "running");
  CHECK(row.at("isolation") == "bubblewrap");
  CHECK(row.at("root_pid").as_int64() > 0);
  CHECK(row.at("cgroup") ==
        json::value(d.cgroup_root() + "/agents/a/sessions/s"));
  auto done = wait_done(c, "a", "s", run_id(row));
  CHECK(done.at("state") == "completed");
  CHECK(done.at("root_exit_code") == 0);
  CHECK(done.at("lifecycle_complete") == true);
  CHECK(done.at("trace_complete") == false);
  CHECK(done.at("session_fenced") == false);
  CHECK(output(c, "a", "s", run_id(row)) ==
        "/workspace\n/workspace /tmp a s /agent/shared\nproc\nnocgroup\n"
        "shared\n");
  CHECK(output(c, "a", "s", run_id(row), "stderr") == "err\n");
  // Logs live outside the store, in the session's directory.
  auto logs = d.runs_dir() + "/sessions/a/s/" + run_id(row);
  CHECK(done.at("audit_directory") == json::value(logs));
  CHECK(::access((logs + "/stdout.log").c_str(), F_OK) == 0);
  // The session group is gone once empty.
  CHECK(::access(done.at("cgroup").as_string().c_str(), F_OK) != 0);
  auto list = d.client().rpc("process.list", ids("a", "s"));
  auto& rows = list.json.as_object().at("result").as_array();
  REQUIRE(rows.size() == 1);
  CHECK_FALSE(rows[0].as_object().contains("processes"));
}

TEST_CASE("process: private /tmp is seeded from and synced to .allox-tmp") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  write_file(d.current("a", "s") + "/.allox-tmp/seed", "from workspace");
  auto row = sh(c, "a", "s",
                "cat /tmp/seed; echo new > /tmp/made; mkdir /tmp/dir; "
                "echo deep > /tmp/dir/f; ln -s made /tmp/link; "
                "mkfifo /tmp/fifo; rm /tmp/seed");
  wait_done(c, "a", "s", run_id(row));
  CHECK(output(c, "a", "s", run_id(row)) == "from workspace");
  auto tmp = d.current("a", "s") + "/.allox-tmp";
  CHECK(read_file(tmp + "/made") == "new\n");
  CHECK(read_file(tmp + "/dir/f") == "deep\n");
  char target[64] = {};
  CHECK(::readlink((tmp + "/link").c_str(), target, sizeof(target)) > 0);
  CHECK(std::string{target} == "made");
  CHECK(::access((tmp + "/fifo").c_str(), F_OK) != 0);
  CHECK(::access((tmp + "/seed").c_str(), F_OK) != 0);
  // A killed run's /tmp is discarded.
  auto killed = sh(c, "a", "s", "echo lost > /tmp/lost; sleep 60");
  expect_ok(
      c.rpc("process.stop", with(ids("a", "s"), {{"run_id", run_id(killed)}})));
  CHECK(::access((tmp + "/lost").c_str(), F_OK) != 0);
  CHECK(read_file(tmp + "/made") == "new\n");
}

TEST_CASE("process: stop, timeout, and descendants that outlive the first "
          "process") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto sleeper = start(c, "a", "s", json::array{"sleep", "60"});
  auto stopped = expect_ok(c.rpc(
      "process.stop", with(ids("a", "s"), {{"run_id", run_id(sleeper)}})));
  CHECK(stopped.at("state") == "stopped");
  CHECK(stopped.at("stop_reason") == "requested");
  CHECK(stopped.at("session_fenced") == false);

  auto timed =
      start(c, "a", "s", json::array{"sleep", "60"}, {{"timeout", 0.2}});
  auto done = wait_done(c, "a", "s", run_id(timed));
  CHECK(done.at("state") == "stopped");
  CHECK(done.at("stop_reason") == "timeout");

  // A double-forked, setsid descendant keeps the run alive after the first
  // process exits, and process.stop still kills it.
  auto forked =
      sh(c, "a", "s", "(setsid sh -c 'sleep 60' &) ; echo parent-exits");
  std::this_thread::sleep_for(std::chrono::milliseconds{500});
  auto alive = expect_ok(
      c.rpc("process.get", with(ids("a", "s"), {{"run_id", run_id(forked)}})));
  CHECK(alive.at("state") == "running");
  CHECK(os::populated(std::string{alive.at("cgroup").as_string()}));
  // The run holds the session's lease: no second run meanwhile (a
  // checkpoint freezes it instead, live_checkpoint_test.cpp).
  expect_error(c.rpc("process.start",
                     with(ids("a", "s"), {{"argv", json::array{"true"}}})),
               400, "conflict");
  auto end = expect_ok(
      c.rpc("process.stop", with(ids("a", "s"), {{"run_id", run_id(forked)}})));
  CHECK(end.at("state") == "stopped");
  CHECK_FALSE(os::populated(std::string{end.at("cgroup").as_string()}));
  expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  CHECK(output(c, "a", "s", run_id(forked)) == "parent-exits\n");
}

TEST_CASE("process: rollback with kill_processes kills a setsid tree and "
          "restores files") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  write_file(d.current("a", "s") + "/f", "before");
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
  auto run = sh(c, "a", "s",
                "echo changed > /workspace/f; (setsid sh -c 'sleep 60' &); "
                "sleep 60");
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  auto refused =
      c.rpc("session.rollback", with(ids("a", "s"), {{"checkpoint_id", "c1"}}));
  expect_error(refused, 400, "conflict");
  auto r = expect_ok(c.rpc("session.rollback",
                           with(ids("a", "s"), {{"checkpoint_id", "c1"},
                                                {"kill_processes", true}})));
  CHECK(r.at("terminated_process_runs") ==
        json::array{json::value(run_id(run))});
  CHECK(read_file(d.current("a", "s") + "/f") == "before");
  auto row = expect_ok(
      c.rpc("process.get", with(ids("a", "s"), {{"run_id", run_id(run)}})));
  CHECK(row.at("state") == "stopped");
  CHECK(row.at("stop_reason") == "rollback");
  // Nothing to kill: an empty list.
  auto again = expect_ok(c.rpc(
      "session.rollback", with(ids("a", "s"), {{"checkpoint_id", "c1"},
                                               {"kill_processes", true}})));
  CHECK(again.at("terminated_process_runs") == json::array{});
  // A runtime reset can kill the tree first too.
  auto held = sh(c, "a", "s", "(setsid sleep 60 &); sleep 60");
  std::this_thread::sleep_for(std::chrono::milliseconds{200});
  expect_error(c.rpc("runtime.begin_reset", ids("a", "s")), 400, "conflict");
  auto reset = expect_ok(c.rpc(
      "runtime.begin_reset", with(ids("a", "s"), {{"kill_processes", true}})));
  CHECK(reset.at("terminated_process_runs") ==
        json::array{json::value(run_id(held))});
  auto killed = expect_ok(
      c.rpc("process.get", with(ids("a", "s"), {{"run_id", run_id(held)}})));
  CHECK(killed.at("stop_reason") == "rollback");
  expect_ok(c.rpc("runtime.complete_reset",
                  {{"reset_token", reset.at("reset_token")}}));
}

TEST_CASE("process: sessions run in parallel, each in its own group") {
  daemon_process d{with_execution()};
  d.start();
  std::vector<std::future<json::object>> runs;
  for (int i = 0; i < 3; ++i) {
    auto s = "s" + std::to_string(i);
    expect_ok(d.client().rpc("session.create", ids("a", s)));
    runs.push_back(std::async(std::launch::async, [&d, s] {
      auto c = d.new_client();
      auto row = sh(*c, "a", s, "sleep 0.3; echo $ALLOX_SESSION_ID");
      return wait_done(*c, "a", s, run_id(row));
    }));
  }
  auto t0 = std::chrono::steady_clock::now();
  std::set<std::string> groups;
  for (int i = 0; i < 3; ++i) {
    auto row = runs[i].get();
    CHECK(row.at("state") == "completed");
    groups.insert(std::string{row.at("cgroup").as_string()});
    CHECK(output(d.client(), "a", "s" + std::to_string(i), run_id(row)) ==
          "s" + std::to_string(i) + "\n");
  }
  CHECK(groups.size() == 3);
  // Not serialised: three 0.3 s runs take well under 0.9 s together.
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds{850});
}

TEST_CASE("process: bad input starts nothing") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto bad = [&](json::object extra, const char* message) {
    auto r = c.rpc("process.start", with(ids("a", "s"), extra));
    expect_error(r, 400, "invalid_argument");
    CHECK(r.json.as_object().at("error") == message);
  };
  const char* argv_msg = "argv must be a nonempty array of nonempty strings";
  bad({}, argv_msg);
  bad({{"argv", json::array{}}}, argv_msg);
  bad({{"argv", json::array{""}}}, argv_msg);
  bad({{"argv", json::array{1}}}, argv_msg);
  bad({{"argv", "true"}}, argv_msg);
  bad({{"argv", json::array{std::string("a\0b", 3)}}}, argv_msg);
  const char* env_msg =
      "env must be a string mapping with valid environment names";
  bad({{"argv", json::array{"true"}}, {"env", json::array{}}}, env_msg);
  bad({{"argv", json::array{"true"}}, {"env", json::object{{"A=B", "x"}}}},
      env_msg);
  bad({{"argv", json::array{"true"}}, {"env", json::object{{"", "x"}}}},
      env_msg);
  bad({{"argv", json::array{"true"}}, {"env", json::object{{"A", 1}}}},
      env_msg);
  const char* timeout_msg = "timeout must be in (0, 86400] seconds";
  for (json::value t : {json::value(0), json::value(-1), json::value(86401),
                        json::value(true), json::value("5")})
    bad({{"argv", json::array{"true"}}, {"timeout", t}}, timeout_msg);
  auto list = expect_ok(c.rpc("process.list", ids("a", "s")));
  (void)list;
  auto rows = c.rpc("process.list", ids("a", "s"));
  CHECK(rows.json.as_object().at("result").as_array().empty());
  expect_error(c.rpc("process.get", with(ids("a", "s"), {{"run_id", "../x"}})),
               400, "invalid_argument");
  expect_error(c.rpc("process.get", with(ids("a", "s"), {{"run_id", "nope"}})),
               400, "not_found");
}

TEST_CASE("process: runs outlive a daemon crash and are adopted: output, "
          "end and exit code, and no fence") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(c.rpc("session.configure", with(ids("a", "s"), {{"max_runs", 3}})));
  auto flag = d.current("a", "s") + "/go";
  // One waits for the test through the crash, one ends during it, one
  // is stopped by the next daemon.
  auto alive = run_id(
      sh(c, "a", "s",
         "echo before; while [ ! -e go ]; do sleep 0.05; done; echo after; "
         "exit 7"));
  auto ended = run_id(sh(c, "a", "s", "echo gone; exit 5"));
  auto stopped = run_id(start(
      c, "a", "s", json::array{"sh", "-c", "cat >/dev/null; exec sleep 600"},
      {{"stdin", true}}));
  REQUIRE(eventually([&] { return output(c, "a", "s", alive) == "before\n"; }));
  wait_done(c, "a", "s", ended);
  d.crash();
  d.start();
  auto row =
      expect_ok(c.rpc("process.get", with(ids("a", "s"), {{"run_id", alive}})));
  CHECK(row.at("state") == "running");
  CHECK(row.at("session_fenced") == false);
  // A run's stdin went with the daemon that held it.
  auto feed = [&](const std::string& id) {
    return c.rpc("process.input",
                 with(ids("a", "s"), {{"run_id", id}, {"data", "x"}}));
  };
  expect_error(feed(alive), 400, "invalid_argument");
  expect_error(feed(stopped), 400, "conflict");
  test::write_file(flag, "");
  auto done = wait_done(c, "a", "s", alive);
  CHECK(done.at("state") == "completed");
  CHECK(done.at("root_exit_code") == 7);
  CHECK(done.at("session_fenced") == false);
  CHECK(output(c, "a", "s", alive) == "before\nafter\n");
  auto gone = wait_done(c, "a", "s", ended);
  CHECK(gone.at("state") == "completed");
  CHECK(gone.at("root_exit_code") == 5);
  auto killed = expect_ok(
      c.rpc("process.stop", with(ids("a", "s"), {{"run_id", stopped}})));
  CHECK(killed.at("state") == "stopped");
  CHECK(killed.at("stop_reason") == "requested");
  // Nothing fences the session; it runs and checkpoints as before.
  expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  auto next = wait_done(c, "a", "s", run_id(sh(c, "a", "s", "true")));
  CHECK(next.at("state") == "completed");
}

TEST_CASE("process: a run killed with its init while the daemon was away "
          "fences its session until session.unfence") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto run = sh(c, "a", "s", "(setsid sleep 60 &); sleep 60");
  d.crash();
  // No daemon sees it end, and its init records no status.
  auto group = d.cgroup_root() + "/agents/a/sessions/s";
  REQUIRE_FALSE(os::kill_group(group));
  REQUIRE(os::wait_empty(group, 10000));
  d.start();
  auto row = expect_ok(
      c.rpc("process.get", with(ids("a", "s"), {{"run_id", run_id(run)}})));
  CHECK(row.at("state") == "interrupted");
  CHECK(row.at("session_fenced") == true);
  CHECK(row.at("trace_complete") == false);
  expect_error(c.rpc("checkpoint.create", ids("a", "s")), 400, "conflict");
  expect_error(c.rpc("process.start",
                     with(ids("a", "s"), {{"argv", json::array{"true"}}})),
               400, "conflict");
  // Still fenced after another restart.
  d.stop();
  d.start();
  expect_error(c.rpc("checkpoint.create", ids("a", "s")), 400, "conflict");
  // And after the session actor fails and is restarted.
  bool faults = fault_injection_built(c);
  auto fail_session_actor = [&] {
    expect_ok(
        c.rpc("debug.fault", fault("a", "s", "session.describe", "throw")));
    expect_error(c.rpc("session.describe", ids("a", "s")), 500, "internal");
    REQUIRE(eventually([&] {
      return c.rpc("session.describe", ids("a", "s")).status == 200;
    }));
  };
  if (faults) {
    fail_session_actor();
    expect_error(c.rpc("checkpoint.create", ids("a", "s")), 400, "conflict");
  }
  auto unfenced = expect_ok(c.rpc("session.unfence", ids("a", "s")));
  CHECK(unfenced.at("cleared").as_object().at("interrupted_runs") ==
        json::array{json::value(run_id(run))});
  CHECK_FALSE(os::populated(d.cgroup_root() + "/agents/a/sessions/s"));
  expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  auto after = expect_ok(
      c.rpc("process.get", with(ids("a", "s"), {{"run_id", run_id(run)}})));
  CHECK(after.at("session_fenced") == false);
  // Lifted for good: a restarted session actor is not fenced again.
  if (faults) {
    fail_session_actor();
    expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  }
  d.stop();
  d.start();
  expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
}

TEST_CASE("process: a clean shutdown stops runs with daemon_shutdown") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto run = start(c, "a", "s", json::array{"sleep", "60"});
  CHECK(d.stop(SIGTERM) == 0);
  d.start();
  auto row = expect_ok(
      c.rpc("process.get", with(ids("a", "s"), {{"run_id", run_id(run)}})));
  CHECK(row.at("state") == "stopped");
  CHECK(row.at("stop_reason") == "daemon_shutdown");
  CHECK(row.at("session_fenced") == false);
  expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
}

TEST_CASE("process: with --live-restore a clean stop leaves runs running, "
          "with the store mounted, and the next daemon adopts them") {
  daemon_process d{with_execution({"--live-restore"})};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto run = run_id(
      sh(c, "a", "s",
         "echo before; while [ ! -e go ]; do sleep 0.05; done; echo after; "
         "exit 3"));
  REQUIRE(eventually([&] { return output(c, "a", "s", run) == "before\n"; }));
  CHECK(d.stop(SIGTERM) == 0);
  auto group = d.cgroup_root() + "/agents/a/sessions/s";
  CHECK(os::populated(group));
  CHECK(d.log().find("store left mounted") != std::string::npos);
  d.start();
  CHECK(d.log().find("(adopted)") != std::string::npos);
  auto row =
      expect_ok(c.rpc("process.get", with(ids("a", "s"), {{"run_id", run}})));
  CHECK(row.at("state") == "running");
  test::write_file(d.current("a", "s") + "/go", "");
  auto done = wait_done(c, "a", "s", run);
  CHECK(done.at("state") == "completed");
  CHECK(done.at("root_exit_code") == 3);
  CHECK(done.at("session_fenced") == false);
  CHECK(output(c, "a", "s", run) == "before\nafter\n");
  // With nothing left running, the stop unmounts the store as always.
  CHECK(d.stop(SIGTERM) == 0);
  CHECK(d.log().find("store unmounted") != std::string::npos);
}

TEST_CASE("process: a run's output and state stream live over HTTP") {
  auto opts = with_execution();
  opts.token = "tok";
  daemon_process d{opts};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto row = sh(c, "a", "s", "echo one; sleep 0.3; echo two; echo oops >&2");
  auto target = "/v1/stream?agent_id=a&session_id=s&run_id=" + run_id(row);
  // Same token rule as the RPC.
  http_client anonymous{"127.0.0.1", d.port()};
  CHECK(
      anonymous.raw("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n").status ==
      401);
  auto r = c.raw("GET " + target +
                 " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n\r\n");
  CHECK(r.status == 200);
  CHECK(r.headers["Content-Type"] == "text/event-stream");
  const auto& body = r.body;
  auto one = body.find(R"(event: stdout)"
                       "\n"
                       R"(data: {"offset":0,"data":"one\n"})");
  auto two = body.find(R"(data: {"offset":4,"data":"two\n"})");
  auto running = body.find(R"(data: {"state":"running"})");
  auto end = body.find("event: end\n"
                       R"(data: {"state":"completed"})");
  CHECK(one != std::string::npos);
  CHECK(two != std::string::npos);
  CHECK(running != std::string::npos);
  CHECK(body.find(R"(event: stderr)"
                  "\n"
                  R"(data: {"offset":0,"data":"oops\n"})") !=
        std::string::npos);
  REQUIRE(end != std::string::npos);
  CHECK(one < two);
  CHECK(two < end);
  CHECK(end + 40 >= body.size()); // the last event
  auto bad = c.raw("GET /v1/stream?agent_id=a HTTP/1.1\r\nHost: x\r\n"
                   "Authorization: Bearer tok\r\n\r\n");
  expect_error(bad, 400, "invalid_argument");
  auto unknown =
      c.raw("GET /v1/stream?agent_id=a&session_id=s&run_id=nope "
            "HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n\r\n");
  CHECK(unknown.status == 200);
  CHECK(unknown.body.find("event: error") != std::string::npos);
}

TEST_CASE("process: process.wait answers the moment a run ends, or with the "
          "current row at its timeout") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto wait = [&](const std::string& id, int timeout_ms) {
    return c.rpc(
        "process.wait",
        with(ids("a", "s"), {{"run_id", id}, {"timeout_ms", timeout_ms}}));
  };
  using clock_type = std::chrono::steady_clock;
  auto row = sh(c, "a", "s", "sleep 0.4; exit 3");
  auto started = clock_type::now();
  auto done = expect_ok(wait(run_id(row), 10000));
  auto took = clock_type::now() - started;
  CHECK(done.at("state") == "completed");
  CHECK(done.at("root_exit_code") == 3);
  CHECK(took >= std::chrono::milliseconds{300});
  CHECK(took < std::chrono::seconds{3});
  // An ended run answers at once, as does a timeout of 0.
  CHECK(expect_ok(wait(run_id(row), 10000)).at("state") == "completed");
  // A run that outlives the timeout: the current row, then stop it.
  auto slow = sh(c, "a", "s", "sleep 30");
  started = clock_type::now();
  auto current = expect_ok(wait(run_id(slow), 200));
  took = clock_type::now() - started;
  CHECK(current.at("state") == "running");
  CHECK(took >= std::chrono::milliseconds{150});
  CHECK(took < std::chrono::seconds{3});
  // Two waiters on one run are both answered by its end.
  auto other = d.new_client();
  auto waiting = std::async(std::launch::async, [&] {
    return other->rpc(
        "process.wait",
        with(ids("a", "s"), {{"run_id", run_id(slow)}, {"timeout_ms", 20000}}));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds{100});
  expect_ok(
      c.rpc("process.stop", with(ids("a", "s"), {{"run_id", run_id(slow)}})));
  auto stopped = expect_ok(waiting.get());
  CHECK(stopped.at("state") == "stopped");
  // Bad input and unknown runs are refused like process.get.
  expect_error(wait(run_id(row), -1), 400, "invalid_argument");
  expect_error(wait(run_id(row), 300001), 400, "invalid_argument");
  expect_error(wait("nope", 100), 400, "not_found");
}
