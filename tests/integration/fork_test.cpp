// SPDX-License-Identifier: Apache-2.0
// session.fork on the real store: a new session from any checkpoint, the
// source untouched, and all or nothing across a crash at every step.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"

#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

using namespace allox;
using namespace allox::test;

namespace {

std::string file_in(const daemon_process& d, const std::string& s,
                    const std::string& name) {
  return read_file(d.current("a", s) + "/" + name);
}

json::object fork(http_client& c, const std::string& from,
                  const std::string& to, json::object extra = {}) {
  return expect_ok(
      c.rpc("session.fork",
            with(with(ids("a", from), {{"new_session_id", to}}), extra)));
}

/// Session s with f.txt ("data") and its checkpoint c1.
void source_with_checkpoint(daemon_process& d) {
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  write_file(d.current("a", "s") + "/f.txt", "data");
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
}

/// Starts `d` with session s and its checkpoint c1; false in a release
/// build, which has no fault points.
bool start_with_source(daemon_process& d) {
  d.start();
  if (!fault_injection_built(d.client()))
    return false;
  source_with_checkpoint(d);
  return true;
}

/// The next fork from s makes its baseline `millis` after its reply, or
/// with `effect` "throw" fails it then.
void baseline_after(http_client& c, int millis,
                    const std::string& effect = "delay") {
  expect_ok(c.rpc("debug.fault", fault("a", "s", "session.fork.before_baseline",
                                       effect, millis)));
}

} // namespace

TEST_CASE("fork: a new session from a checkpoint, and the two never see each "
          "other's writes") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  write_file(d.current("a", "s") + "/a.txt", "one");
  auto c1 = expect_ok(c.rpc("checkpoint.create",
                            with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
  write_file(d.current("a", "s") + "/a.txt", "two");
  // The source keeps running while it is forked.
  auto run = run_id(start(c, "a", "s", json::array{"sleep", "30"}));
  auto t = fork(c, "s", "t", {{"checkpoint_id", "c1"}});
  CHECK(t.at("session_id") == "t");
  CHECK(t.at("forked_from") ==
        json::object{{"session_id", "s"}, {"checkpoint_id", "c1"}});
  CHECK(file_in(d, "t", "a.txt") == "one");
  CHECK(file_in(d, "s", "a.txt") == "two");
  auto list = expect_ok(c.rpc("checkpoint.list", ids("a", "t")));
  REQUIRE(list.at("checkpoints").as_array().size() == 1);
  auto& base = list.at("checkpoints").as_array()[0].as_object();
  CHECK(list.at("head") == base.at("checkpoint_id"));
  CHECK(base.at("metadata").at("forked_from").at("checkpoint_id") == "c1");
  CHECK(base.at("origin") == "allox-control-plane");
  // The baseline's row was committed unsynced, its intent record the
  // durable copy: the new session's idle work syncs the row and drops it.
  auto records = [&] {
    int n = 0;
    auto names =
        os::list_dir(d.root() + "/agents/a/workspace/sessions/t/checkpoints");
    REQUIRE(names);
    for (const auto& name : *names)
      n += name.rfind(".creating-", 0) == 0;
    return n;
  };
  for (int i = 0; i < 100 && records() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  CHECK(records() == 0);
  write_file(d.current("a", "t") + "/only-t.txt", "t");
  write_file(d.current("a", "s") + "/only-s.txt", "s");
  CHECK(::access((d.current("a", "s") + "/only-t.txt").c_str(), F_OK) != 0);
  CHECK(::access((d.current("a", "t") + "/only-s.txt").c_str(), F_OK) != 0);
  auto row =
      expect_ok(c.rpc("process.get", with(ids("a", "s"), {{"run_id", run}})));
  CHECK(row.at("state") == "running");
  expect_ok(c.rpc("process.stop", with(ids("a", "s"), {{"run_id", run}})));
  // The fork is a session like any other: rollback to its baseline.
  expect_ok(c.rpc(
      "session.rollback",
      with(ids("a", "t"), {{"checkpoint_id", base.at("checkpoint_id")}})));
  CHECK(::access((d.current("a", "t") + "/only-t.txt").c_str(), F_OK) != 0);
  // Without a checkpoint: the source's current/ is checkpointed first.
  auto u = fork(c, "s", "u");
  auto from = std::string{u.at("forked_from").at("checkpoint_id").as_string()};
  CHECK(file_in(d, "u", "a.txt") == "two");
  CHECK(file_in(d, "u", "only-s.txt") == "s");
  auto src = expect_ok(c.rpc("checkpoint.describe",
                             with(ids("a", "s"), {{"checkpoint_id", from}})));
  CHECK(src.at("message") == "fork to u");
  // Survives a restart.
  d.stop();
  d.start();
  CHECK(file_in(d, "t", "a.txt") == "one");
  auto again = expect_ok(c.rpc("session.describe", ids("a", "u")));
  CHECK(again.at("checkpoint_head") == u.at("checkpoint_head"));
  (void)c1;
}

TEST_CASE("fork: bad requests are refused and change nothing") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(c.rpc("session.create", ids("a", "taken")));
  auto fork_req = [&](json::object p) {
    return c.rpc("session.fork", with(ids("a", "s"), p));
  };
  expect_error(fork_req({{"new_session_id", "taken"}}), 400, "already_exists");
  expect_error(fork_req({{"new_session_id", "s"}}), 400, "invalid_argument");
  expect_error(fork_req({{"new_session_id", "../x"}}), 400, "invalid_argument");
  expect_error(fork_req({{"new_session_id", "n"}, {"checkpoint_id", "nope"}}),
               400, "not_found");
  expect_error(fork_req({{"new_session_id", "n"}, {"new_agent_id", "b"}}), 400,
               "invalid_argument");
  expect_error(c.rpc("session.fork",
                     with(ids("a", "missing"), {{"new_session_id", "n"}})),
               400, "not_found");
  auto sessions = expect_ok(c.rpc("session.list", {{"agent_id", "a"}}));
  CHECK(sessions.at("session_ids") == json::array{"s", "taken"});
  CHECK(::access((d.root() + "/agents/a/workspace/sessions/n").c_str(), F_OK) !=
        0);
}

TEST_CASE("fork: a crash at any step leaves no new session or a whole one") {
  daemon_process d;
  if (!start_with_source(d))
    return; // release build
  auto& c = d.client();
  struct point_case {
    const char* point;
    const char* session; // the actor the point is in: agent or source
    bool complete;
  };
  int n = 0;
  for (auto [point, session, complete] :
       {point_case{"session.fork.before_snapshots", "s", false},
        // current/ made and answered (or about to be), the baseline not
        // yet: start-up takes it from the checkpoint.
        point_case{"session.fork.before_baseline", "s", true},
        // No row yet: start-up adopts it, the baseline from its record.
        point_case{"session.fork.before_commit", "", true},
        point_case{"session.fork.after_commit", "", true}}) {
    std::string point_name{point};
    CAPTURE(point_name);
    auto target = "f" + std::to_string(n++);
    json::object fault{
        {"agent_id", "a"}, {"point", point}, {"effect", "crash"}};
    if (*session != '\0')
      fault["session_id"] = session;
    expect_ok(c.rpc("debug.fault", fault));
    c.try_rpc("session.fork", with(ids("a", "s"), {{"new_session_id", target},
                                                   {"checkpoint_id", "c1"}}));
    CHECK(d.wait_exit(std::chrono::seconds{10}) == 128 + SIGKILL);
    d.start();
    auto sessions = expect_ok(c.rpc("session.list", {{"agent_id", "a"}}));
    bool listed = false;
    for (const auto& s : sessions.at("session_ids").as_array())
      listed |= s == json::value(target);
    CHECK(listed == complete);
    auto dir = d.root() + "/agents/a/workspace/sessions/" + target;
    CHECK((::access(dir.c_str(), F_OK) == 0) == complete);
    if (complete) {
      CHECK(file_in(d, target, "f.txt") == "data");
      auto l = expect_ok(c.rpc("checkpoint.list", ids("a", target)));
      REQUIRE(l.at("checkpoints").as_array().size() == 1);
      CHECK(
          l.at("checkpoints").as_array()[0].at("metadata").at("forked_from") ==
          json::object{{"session_id", "s"}, {"checkpoint_id", "c1"}});
    } else {
      // The same id forks cleanly afterwards.
      fork(c, "s", target, {{"checkpoint_id", "c1"}});
      CHECK(file_in(d, target, "f.txt") == "data");
    }
  }
}

TEST_CASE("fork: a baseline lost in a crash is taken from the fork's own tree "
          "when its checkpoint is gone too") {
  daemon_process d;
  if (!start_with_source(d))
    return; // release build
  auto& c = d.client();
  expect_ok(c.rpc("debug.fault",
                  fault("a", "s", "session.fork.before_baseline", "crash", 0)));
  c.try_rpc("session.fork", with(ids("a", "s"), {{"new_session_id", "t"},
                                                 {"checkpoint_id", "c1"}}));
  CHECK(d.wait_exit(std::chrono::seconds{10}) == 128 + SIGKILL);
  REQUIRE_FALSE(os::remove_tree(
      d.root() + "/agents/a/workspace/sessions/s/checkpoints/c1"));
  d.start();
  CHECK(file_in(d, "t", "f.txt") == "data");
  auto l = expect_ok(c.rpc("checkpoint.list", ids("a", "t")));
  REQUIRE(l.at("checkpoints").as_array().size() == 1);
  auto base = l.at("checkpoints").as_array()[0].at("checkpoint_id");
  CHECK(read_file(d.root() + "/agents/a/workspace/sessions/t/checkpoints/" +
                  std::string{base.as_string()} + "/f.txt") == "data");
  // A session like any other.
  write_file(d.current("a", "t") + "/f.txt", "changed");
  expect_ok(c.rpc("session.rollback",
                  with(ids("a", "t"), {{"checkpoint_id", base}})));
  CHECK(file_in(d, "t", "f.txt") == "data");
}

TEST_CASE("fork: what follows the reply at once waits for the baseline") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  source_with_checkpoint(d);
  // Each right after the reply, while the source makes the baseline.
  for (int i = 0; i < 4; ++i) {
    auto t = "t" + std::to_string(i);
    auto base =
        fork(c, "s", t, {{"checkpoint_id", "c1"}}).at("checkpoint_head");
    expect_ok(c.rpc("session.rollback",
                    with(ids("a", t), {{"checkpoint_id", base}})));
    CHECK(file_in(d, t, "f.txt") == "data");
  }
  for (int i = 0; i < 4; ++i) {
    auto t = "f" + std::to_string(i);
    auto base =
        fork(c, "s", t, {{"checkpoint_id", "c1"}}).at("checkpoint_head");
    fork(c, t, t + "-again", {{"checkpoint_id", base}});
    CHECK(file_in(d, t + "-again", "f.txt") == "data");
  }
  for (int i = 0; i < 4; ++i) {
    auto t = "d" + std::to_string(i);
    fork(c, "s", t, {{"checkpoint_id", "c1"}});
    expect_ok(c.rpc("session.delete", ids("a", t)));
  }
  auto v = fork(c, "s", "v", {{"checkpoint_id", "c1"}});
  expect_ok(c.rpc("checkpoint.delete",
                  with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
  CHECK(read_file(d.root() + "/agents/a/workspace/sessions/v/checkpoints/" +
                  std::string{v.at("checkpoint_head").as_string()} +
                  "/f.txt") == "data");
  // Nothing left behind by the deleted sessions.
  auto names = os::list_dir(d.root() + "/agents/a/workspace/sessions");
  REQUIRE(names);
  for (const auto& name : *names)
    CHECK(name[0] != '.');
  CHECK(names->size() == 14); // s, t0-3, f0-3 and their forks, v
}

TEST_CASE("fork: a baseline slower than the idle delay keeps the fork's "
          "order and its record") {
  daemon_process d;
  if (!start_with_source(d))
    return; // release build
  auto& c = d.client();
  // The rollback waits behind the baseline, past the idle delay (1 s).
  baseline_after(c, 2500);
  auto base =
      fork(c, "s", "t", {{"checkpoint_id", "c1"}}).at("checkpoint_head");
  write_file(d.current("a", "t") + "/f.txt", "changed");
  expect_ok(c.rpc("session.rollback",
                  with(ids("a", "t"), {{"checkpoint_id", base}})));
  CHECK(file_in(d, "t", "f.txt") == "data");
  // A crash after the idle delay, the baseline not yet made: the intent
  // record is still there, and start-up makes the baseline.
  baseline_after(c, 2500);
  fork(c, "s", "u", {{"checkpoint_id", "c1"}});
  std::this_thread::sleep_for(std::chrono::milliseconds{1800});
  d.crash();
  d.start();
  CHECK(file_in(d, "u", "f.txt") == "data");
  auto l = expect_ok(c.rpc("checkpoint.list", ids("a", "u")));
  REQUIRE(l.at("checkpoints").as_array().size() == 1);
  auto id = std::string{
      l.at("checkpoints").as_array()[0].at("checkpoint_id").as_string()};
  CHECK(read_file(d.root() + "/agents/a/workspace/sessions/u/checkpoints/" +
                  id + "/f.txt") == "data");
}

TEST_CASE("fork: agent.delete right after a fork waits for its baseline") {
  daemon_process d;
  if (!start_with_source(d))
    return; // release build
  auto& c = d.client();
  baseline_after(c, 1500);
  fork(c, "s", "t", {{"checkpoint_id", "c1"}});
  // The baseline is made before the agent's directory goes: a snapshot
  // must not land in a tree being removed. So the answer comes after the
  // baseline's delay, not at once.
  auto started = std::chrono::steady_clock::now();
  expect_ok(c.rpc("agent.delete", ids("a")));
  CHECK(std::chrono::steady_clock::now() - started >=
        std::chrono::milliseconds{1000});
  CHECK(d.log().find("not made") == std::string::npos);
  CHECK(os::kind_of(d.root() + "/agents/a") == os::entry_kind::missing);
  d.crash();
  d.start();
  auto agents = expect_ok(c.rpc("agent.list"));
  for (const auto& id : agents.at("agent_ids").as_array())
    CHECK(id.as_string() != "a");
  CHECK(os::kind_of(d.root() + "/agents/a") == os::entry_kind::missing);
}

TEST_CASE("fork: steps queued behind a baseline that failed do not run") {
  daemon_process d;
  if (!start_with_source(d))
    return; // release build
  auto& c = d.client();
  // The baseline fails 1.5 s after the reply; until then the new session
  // takes commands, which queue behind it.
  baseline_after(c, 1500, "throw");
  fork(c, "s", "t", {{"checkpoint_id", "c1"}});
  write_file(d.current("a", "t") + "/f.txt", "changed");
  auto queued = c.rpc("checkpoint.create",
                      with(ids("a", "t"), {{"checkpoint_id", "c2"}}));
  expect_error(queued, 400, "conflict");
  CHECK(
      os::kind_of(d.root() + "/agents/a/workspace/sessions/t/checkpoints/c2") ==
      os::entry_kind::missing);
  // Fenced now; start-up recovery makes the baseline from c1.
  expect_error(c.rpc("checkpoint.create", ids("a", "t")), 400, "conflict");
  d.crash();
  d.start();
  auto l = expect_ok(c.rpc("checkpoint.list", ids("a", "t")));
  REQUIRE(l.at("checkpoints").as_array().size() == 1);
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "t"), {{"checkpoint_id", "c2"}})));
  CHECK(file_in(d, "t", "f.txt") == "changed");
}

TEST_CASE("fork: an agent actor that fails mid-fork hands the pending "
          "baseline to its replacement") {
  daemon_process d;
  if (!start_with_source(d))
    return; // release build
  auto& c = d.client();
  baseline_after(c, 1500);
  auto base =
      fork(c, "s", "t", {{"checkpoint_id", "c1"}}).at("checkpoint_head");
  // The AGENT fails while the source's lane still makes the baseline; its
  // replacement spawns s and t again from the catalog.
  expect_ok(c.rpc("debug.fault", fault("a", "", "agent.describe", "throw")));
  expect_error(c.rpc("agent.describe", ids("a")), 500, "internal");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{1};
  while (c.rpc("agent.describe", ids("a")).status != 200 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  // The new t waits for the baseline as the first one did: the rollback to
  // it finds it made.
  write_file(d.current("a", "t") + "/f.txt", "changed");
  auto rb =
      c.rpc("session.rollback", with(ids("a", "t"), {{"checkpoint_id", base}}));
  INFO(rb.body);
  expect_ok(rb);
  CHECK(file_in(d, "t", "f.txt") == "data");
  // So does the new s for the baseline made on its old lane: a checkpoint
  // of s does not race it.
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "s"), {{"checkpoint_id", "c2"}})));
  CHECK(d.log().find("not made") == std::string::npos);
}
