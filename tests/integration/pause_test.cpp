// SPDX-License-Identifier: Apache-2.0
// session.pause, session.resume and session.usage on the real kernel: a
// paused session's processes are frozen in its cgroup (they make no
// progress, keep their memory and go on after the resume), its files are
// checkpointed while held, and no run starts until the resume.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/session_files.hpp"
#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

using namespace allox;
using namespace allox::test;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string read_control(const daemon_process& d, const std::string& file) {
  auto text = slurp(d.cgroup_root() + "/agents/a/sessions/s/" + file);
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}

} // namespace

TEST_CASE("pause: a counting run is frozen, its files checkpointed as they "
          "were, no run starts, and after the resume it counts on") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  // Writes an increasing counter ten times a second for 30 s.
  auto run = run_id(sh(c, "a", "s",
                       "i=0; while [ $i -lt 300 ]; do i=$((i+1)); "
                       "echo $i > count.txt; sleep 0.1; done"));
  auto current = d.root() + "/agents/a/workspace/sessions/s/current/";
  REQUIRE(eventually([&] { return slurp(current + "count.txt").size() > 1; },
                     std::chrono::seconds{5}));
  auto paused = expect_ok(
      c.rpc("session.pause", with(ids("a", "s"), {{"message", "held"}})));
  CHECK(paused.at("paused") == true);
  CHECK(paused.at("kept_memory") == true);
  CHECK(paused.at("runs") == json::array{json::value(run)});
  CHECK(read_control(d, "cgroup.freeze") == "1");
  auto cp = std::string{paused.at("checkpoint_id").as_string()};
  auto described = expect_ok(c.rpc(
      "checkpoint.describe", with(ids("a", "s"), {{"checkpoint_id", cp}})));
  CHECK(described.at("metadata") ==
        json::parse(R"({"pause":{"kept_memory":true}})"));
  CHECK(described.at("message") == "held");
  // Held: the counter stands still, and the checkpoint has its value.
  auto at_pause = slurp(current + "count.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds{500});
  CHECK(slurp(current + "count.txt") == at_pause);
  CHECK(slurp(d.root() + "/agents/a/workspace/sessions/s/checkpoints/" + cp +
              "/count.txt") == at_pause);
  // The run is still alive; nothing new starts; a second pause is refused.
  CHECK(expect_ok(c.rpc("process.get", with(ids("a", "s"), {{"run_id", run}})))
            .at("state") == "running");
  expect_error(c.rpc("process.start",
                     with(ids("a", "s"), {{"argv", json::array{"true"}}})),
               400, "conflict");
  expect_error(c.rpc("session.pause", ids("a", "s")), 400, "conflict");
  // Files stay readable while paused; usage sees the held processes.
  auto usage = expect_ok(c.rpc("session.usage", ids("a", "s")));
  CHECK(usage.at("paused") == true);
  CHECK(usage.at("runs") == 1);
  CHECK(usage.at("processes").as_int64() >= 1);
  CHECK(usage.at("memory").as_object().at("bytes").as_int64() > 0);
  CHECK(usage.at("cpu").as_object().at("usage_usec").as_int64() > 0);
  CHECK(usage.at("disk").as_object().at("used_bytes").as_int64() > 0);
  CHECK(usage.at("disk").as_object().at("total_bytes").as_int64() > 0);
  auto resumed = expect_ok(c.rpc("session.resume", ids("a", "s")));
  CHECK(resumed.at("paused") == false);
  CHECK(resumed.at("runs") == json::array{json::value(run)});
  CHECK(read_control(d, "cgroup.freeze") == "0");
  REQUIRE(eventually([&] { return slurp(current + "count.txt") != at_pause; },
                     std::chrono::seconds{5}));
  expect_error(c.rpc("session.resume", ids("a", "s")), 400, "conflict");
  auto stopped =
      expect_ok(c.rpc("process.stop", with(ids("a", "s"), {{"run_id", run}})));
  CHECK(stopped.at("state") == "stopped");
}

TEST_CASE("pause: without memory the runs are stopped, the checkpoint is "
          "taken, and a paused session without runs resumes to take new "
          "ones") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(c.rpc("file.write", with(ids("a", "s"), {{"path", "kept.txt"},
                                                     {"data", "kept"}})));
  auto run = run_id(sh(c, "a", "s", "sleep 30"));
  auto paused = expect_ok(
      c.rpc("session.pause", with(ids("a", "s"), {{"keep_memory", false}})));
  CHECK(paused.at("kept_memory") == false);
  CHECK(paused.at("runs") == json::array{json::value(run)});
  auto row =
      expect_ok(c.rpc("process.get", with(ids("a", "s"), {{"run_id", run}})));
  CHECK(row.at("state") == "stopped");
  CHECK(row.at("stop_reason") == "paused");
  auto cp = std::string{paused.at("checkpoint_id").as_string()};
  CHECK(slurp(d.root() + "/agents/a/workspace/sessions/s/checkpoints/" + cp +
              "/kept.txt") == "kept");
  auto usage = expect_ok(c.rpc("session.usage", ids("a", "s")));
  CHECK(usage.at("runs") == 0);
  CHECK(usage.at("processes") == 0);
  auto resumed = expect_ok(c.rpc("session.resume", ids("a", "s")));
  CHECK(resumed.at("runs") == json::array{});
  auto next = run_id(sh(c, "a", "s", "echo again"));
  CHECK(wait_done(c, "a", "s", next).at("state") == "completed");
}

TEST_CASE("pause: a paused session's runs outlive a daemon crash frozen, "
          "the session is still paused, and resume thaws them") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto run = run_id(
      sh(c, "a", "s", "while [ ! -e go ]; do sleep 0.05; done; echo thawed"));
  expect_ok(c.rpc("session.pause", ids("a", "s")));
  d.crash();
  d.start();
  // The frozen state is the kernel's: the adopted run is held still.
  auto usage = expect_ok(c.rpc("session.usage", ids("a", "s")));
  CHECK(usage.at("paused") == true);
  CHECK(usage.at("runs") == 1);
  CHECK(read_control(d, "cgroup.freeze") == "1");
  expect_error(c.rpc("process.start",
                     with(ids("a", "s"), {{"argv", json::array{"true"}}})),
               400, "conflict");
  test::write_file(d.current("a", "s") + "/go", "");
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  CHECK(expect_ok(c.rpc("process.get", with(ids("a", "s"), {{"run_id", run}})))
            .at("state") == "running");
  auto resumed = expect_ok(c.rpc("session.resume", ids("a", "s")));
  CHECK(resumed.at("runs") == json::array{json::value(run)});
  auto done = wait_done(c, "a", "s", run);
  CHECK(done.at("state") == "completed");
  CHECK(output(c, "a", "s", run) == "thawed\n");
}

TEST_CASE("pause: an idle session pauses with a checkpoint and no runs, and "
          "an unknown session is not_found") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto paused = expect_ok(c.rpc("session.pause", ids("a", "s")));
  CHECK(paused.at("runs") == json::array{});
  expect_ok(c.rpc("session.resume", ids("a", "s")));
  expect_error(c.rpc("session.pause", ids("a", "nope")), 400, "not_found");
  expect_error(c.rpc("session.usage", ids("a", "nope")), 400, "not_found");
}
