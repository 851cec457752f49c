// SPDX-License-Identifier: Apache-2.0
// Turn lifecycle events and the automatic checkpoint policy against the
// real daemon: every case of the reference adapter's tests
// (test_turn_lifecycle.py), policy precedence and persistence, keep_auto,
// checkpoints after successful runs and on an interval.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/json_text.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/session_files.hpp"
#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>

using namespace allox;
using namespace allox::test;

namespace {

/// One session's turn and policy calls.
struct turns {
  daemon_process& d;
  std::string a = "a", s = "s";

  json::object call(const std::string& action, json::object extra = {}) {
    return expect_ok(d.client().rpc(action, with(ids(a, s), extra)));
  }
  json::object start(json::object extra = {}) {
    return call("turn.session_start", std::move(extra));
  }
  json::object message(const std::string& m) {
    return call("turn.message", {{"message", m}});
  }
  json::object end(json::object extra = {}) {
    return call("turn.end", std::move(extra));
  }
  json::object status() { return call("turn.status"); }
  json::object policy(json::object fields) {
    return call("policy.set", std::move(fields));
  }
  /// The checkpoint record of `id`.
  json::object record(const std::string& id) {
    return call("checkpoint.describe", {{"checkpoint_id", id}});
  }
  std::vector<std::string> checkpoint_ids() {
    std::vector<std::string> out;
    auto list = call("checkpoint.list");
    for (const auto& v : list.at("checkpoint_ids").as_array())
      out.emplace_back(v.as_string());
    return out;
  }
};

/// The keys of an object, sorted.
std::set<std::string> keys(const json::object& o) {
  std::set<std::string> out;
  for (const auto& kv : o)
    out.emplace(kv.key());
  return out;
}

/// The reference's id shape: 8 hex characters.
bool hex8(const std::string& id) {
  return id.size() == 8 && std::all_of(id.begin(), id.end(), [](char ch) {
           return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
         });
}

json::object metadata_of(const json::object& record) {
  return record.at("metadata").as_object();
}

} // namespace

TEST_CASE("turns: disabled by default - no checkpoint and the disabled "
          "results") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  turns t{d};
  json::object start_off{{"enabled", false},
                         {"event", "session_start"},
                         {"created", false},
                         {"skipped", "disabled"}};
  CHECK(t.start() == start_off);
  CHECK(t.end({{"turn_id", "t1"}}) == json::object{{"enabled", false},
                                                   {"event", "turn_end"},
                                                   {"created", false},
                                                   {"skipped", "disabled"}});
  CHECK(t.message("hello") == json::object{{"enabled", false},
                                           {"event", "message_received"},
                                           {"captured", true}});
  CHECK(t.checkpoint_ids().empty());
  auto st = t.status();
  CHECK(st.at("enabled") == false);
  CHECK(st.at("turn_count") == 0);
  CHECK(st.at("session_started") == false);
  CHECK(st.at("skip_next_auto_checkpoint") == false);
  CHECK(st.at("agent_id") == "a");
  CHECK(st.at("session_id") == "s");
  // Bad input never reaches the session.
  expect_error(d.client().rpc("turn.message", ids("a", "s")), 400,
               "invalid_argument");
  expect_error(
      d.client().rpc("turn.end", with(ids("a", "s"), {{"completed", "yes"}})),
      400, "invalid_argument");
  expect_error(d.client().rpc("turn.status", ids("a", "nope")), 400,
               "not_found");
}

TEST_CASE("turns: baseline and turn checkpoints with the reference "
          "metadata shapes") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  turns t{d};
  t.policy({{"auto_checkpoint_turns", true}});

  auto base = t.start({{"runtime_session_id", "rt-1"}});
  CHECK(base.at("enabled") == true);
  CHECK(base.at("event") == "session_start");
  CHECK(base.at("created") == true);
  auto base_id = str(base.at("checkpoint_id"));
  CHECK(hex8(base_id));
  CHECK(base.at("checkpoint").as_object().at("checkpoint_id") ==
        json::value(base_id));
  auto rec = t.record(base_id);
  CHECK(rec.at("message") == "session-start");
  CHECK(rec.at("origin") == "turn-lifecycle");
  CHECK(rec.at("pinned") == false);
  auto meta = metadata_of(rec);
  CHECK(keys(meta) == std::set<std::string>{"auto", "event", "turn",
                                            "timestamp", "runtime_session_id"});
  CHECK(meta.at("auto") == true);
  CHECK(meta.at("event") == "session_start");
  CHECK(meta.at("turn") == 0);
  CHECK(meta.at("runtime_session_id") == "rt-1");
  auto ts = str(meta.at("timestamp"));
  CHECK(ts.size() == 32); // 2026-12-01T04:34:14.123456+00:00
  CHECK(ts[10] == 'T');
  CHECK(ts.substr(ts.size() - 6) == "+00:00");

  // Idempotent start.
  CHECK(t.start() == json::object{{"enabled", true},
                                  {"event", "session_start"},
                                  {"created", false},
                                  {"skipped", "duplicate"}});

  std::string long_message(100, 'x');
  CHECK(t.message(long_message).at("captured") == true);
  auto first = t.end({{"turn_id", "t1"}});
  CHECK(first.at("created") == true);
  CHECK(first.at("event") == "turn_end");
  auto first_rec = t.record(str(first.at("checkpoint_id")));
  CHECK(first_rec.at("message") == json::value(long_message.substr(0, 80)));
  CHECK(first_rec.at("parent_id") == json::value(base_id));
  auto turn_meta = metadata_of(first_rec);
  CHECK(keys(turn_meta) == std::set<std::string>{"auto", "event", "turn",
                                                 "timestamp", "success",
                                                 "interrupted", "turn_id"});
  CHECK(turn_meta.at("event") == "turn_end");
  CHECK(turn_meta.at("turn") == 1);
  CHECK(turn_meta.at("success") == true);
  CHECK(turn_meta.at("interrupted") == false);
  CHECK(turn_meta.at("turn_id") == "t1");

  // Duplicate turn ids.
  CHECK(t.end({{"turn_id", "t1"}}) == json::object{{"enabled", true},
                                                   {"event", "turn_end"},
                                                   {"created", false},
                                                   {"skipped", "duplicate"},
                                                   {"turn_id", "t1"}});

  // A failing turn is checkpointed with success false; without an id the
  // metadata has none; the captured message stays.
  auto failed = t.end({{"completed", false}, {"interrupted", true}});
  CHECK(failed.at("created") == true);
  auto failed_rec = t.record(str(failed.at("checkpoint_id")));
  auto failed_meta = metadata_of(failed_rec);
  CHECK(failed_meta.at("turn") == 2);
  CHECK(failed_meta.at("success") == false);
  CHECK(failed_meta.at("interrupted") == true);
  CHECK_FALSE(failed_meta.contains("turn_id"));
  CHECK(failed_rec.at("message") == json::value(long_message.substr(0, 80)));

  auto st = t.status();
  CHECK(st.at("enabled") == true);
  CHECK(st.at("turn_count") == 2);
  CHECK(st.at("session_started") == true);
  CHECK(st.at("runtime_session_id") == "rt-1");
  // Every automatic checkpoint is audited like a caller's.
  auto ops =
      audit_ops(d.client(), {{"agent_id", "a"}, {"op", "checkpoint.create"}});
  CHECK(ops.size() == 3);
}

TEST_CASE("turns: the message is cut to 80 characters, else agent turn") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  turns t{d};
  t.policy({{"auto_checkpoint_turns", true}});
  auto plain = t.end();
  CHECK(t.record(str(plain.at("checkpoint_id"))).at("message") == "agent turn");
  std::string accented;
  for (int i = 0; i < 100; ++i)
    accented += "\xc3\xa9"; // é, two bytes
  t.message(accented);
  auto cut = t.end();
  CHECK(t.record(str(cut.at("checkpoint_id"))).at("message") ==
        json::value(accented.substr(0, 160)));
  // Not a string: nothing captured (the reference's isinstance check).
  CHECK(t.call("turn.message", {{"message", 7}}).at("captured") == false);
  auto after = t.end();
  CHECK(t.record(str(after.at("checkpoint_id"))).at("message") == "agent turn");
}

TEST_CASE("turns: a rollback skips exactly the next turn end") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  turns t{d};
  t.policy({{"auto_checkpoint_turns", true}});
  auto base = str(t.start().at("checkpoint_id"));
  CHECK(t.end({{"turn_id", "t1"}}).at("created") == true);
  t.call("session.rollback", {{"checkpoint_id", base}});
  CHECK(t.status().at("skip_next_auto_checkpoint") == true);
  CHECK(t.end({{"turn_id", "t2"}}) == json::object{{"enabled", true},
                                                   {"event", "turn_end"},
                                                   {"created", false},
                                                   {"skipped", "rollback"},
                                                   {"turn_id", "t2"}});
  auto st = t.status();
  CHECK(st.at("turn_count") == 1); // the skipped turn does not count
  CHECK(st.at("skip_next_auto_checkpoint") == false);
  // The skipped turn's id is remembered.
  CHECK(t.end({{"turn_id", "t2"}}).at("skipped") == "duplicate");
  auto next = t.end({{"turn_id", "t3"}});
  CHECK(next.at("created") == true);
  auto rec = t.record(str(next.at("checkpoint_id")));
  CHECK(metadata_of(rec).at("turn") == 2);
  CHECK(rec.at("parent_id") == json::value(base));
}

TEST_CASE("turns: a failed checkpoint is non-blocking and the counter "
          "advances, strict fails the turn") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  turns t{d};
  t.policy({{"auto_checkpoint_turns", true}});
  // A live execution lease: every checkpoint answers conflict.
  auto lease = str(t.call("execution.acquire").at("lease_token"));
  auto r = t.end({{"turn_id", "t1"}});
  CHECK(r.at("enabled") == true);
  CHECK(r.at("event") == "turn_end");
  CHECK(r.at("created") == false);
  CHECK(r.at("non_blocking") == true);
  CHECK(hex8(str(r.at("checkpoint_id"))));
  CHECK(str(r.at("error")).find("active executions") != std::string::npos);
  CHECK(t.status().at("turn_count") == 1);
  // A failed baseline still counts as the session's start.
  CHECK(t.start().at("non_blocking") == true);
  CHECK(t.start().at("skipped") == "duplicate");

  t.policy({{"strict", true}});
  auto strict = c.rpc("turn.end", with(ids("a", "s"), {{"turn_id", "t2"}}));
  expect_error(strict, 400, "conflict");
  CHECK(t.status().at("turn_count") == 2);

  expect_ok(c.rpc("execution.release", {{"lease_token", lease}}));
  auto ok = t.end({{"turn_id", "t3"}});
  CHECK(ok.at("created") == true);
  CHECK(metadata_of(t.record(str(ok.at("checkpoint_id")))).at("turn") == 3);
  CHECK(t.checkpoint_ids().size() == 1);
}

TEST_CASE("turns: the state survives a daemon restart and a session actor "
          "restart") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  turns t{d};
  t.policy({{"auto_checkpoint_turns", true}});
  auto base = str(t.start({{"runtime_session_id", "rt"}}).at("checkpoint_id"));
  t.message("the captured message");
  t.end({{"turn_id", "t1"}});
  t.call("session.rollback", {{"checkpoint_id", base}});

  d.stop();
  d.start();
  auto st = t.status();
  CHECK(st.at("enabled") == true); // the policy is persisted too
  CHECK(st.at("turn_count") == 1);
  CHECK(st.at("session_started") == true);
  CHECK(st.at("skip_next_auto_checkpoint") == true);
  CHECK(st.at("runtime_session_id") == "rt");
  CHECK(t.start().at("skipped") == "duplicate");
  CHECK(t.end({{"turn_id", "t1"}}).at("skipped") == "duplicate");
  CHECK(t.end({{"turn_id", "t2"}}).at("skipped") == "rollback");

  if (!fault_injection_built(d.client()))
    return;
  // The actor fails while serving turn.status; its AGENT re-spawns it
  // from the catalog.
  expect_ok(
      d.client().rpc("debug.fault", fault("a", "s", "turn.status", "throw")));
  CHECK(d.client().rpc("turn.status", ids("a", "s")).status != 200);
  json::object again;
  REQUIRE(eventually([&] {
    auto r = d.client().rpc("turn.status", ids("a", "s"));
    if (r.status == 200)
      again = r.json.as_object().at("result").as_object();
    return r.status == 200;
  }));
  CHECK(again.at("turn_count") == 1);
  CHECK(again.at("skip_next_auto_checkpoint") == false);
  CHECK(t.end({{"turn_id", "t2"}}).at("skipped") == "duplicate");
  auto next = t.end({{"turn_id", "t3"}});
  CHECK(next.at("created") == true);
  auto rec = t.record(str(next.at("checkpoint_id")));
  CHECK(rec.at("message") == "the captured message");
  CHECK(metadata_of(rec).at("turn") == 2);
}

TEST_CASE("policy: a session's setting overrides its agent's, which "
          "overrides the default - persisted and audited") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto agent = expect_ok(c.rpc("policy.get", ids("a")));
  CHECK(agent.at("policy") == json::object{{"auto_checkpoint_turns", false},
                                           {"auto_checkpoint_runs", false},
                                           {"interval_seconds", 0},
                                           {"keep_auto", 0},
                                           {"strict", false},
                                           {"keep_pre_rollback", false}});
  CHECK(agent.at("sources").as_object().at("keep_auto") == "default");
  CHECK_FALSE(agent.contains("session"));

  auto set = expect_ok(c.rpc(
      "policy.set",
      with(ids("a"), {{"auto_checkpoint_turns", true}, {"keep_auto", 3}})));
  CHECK(set.at("agent") ==
        json::object{{"auto_checkpoint_turns", true}, {"keep_auto", 3}});
  turns t{d};
  auto eff = t.call("policy.get");
  CHECK(eff.at("policy").as_object().at("auto_checkpoint_turns") == true);
  CHECK(eff.at("sources").as_object().at("auto_checkpoint_turns") == "agent");
  CHECK(eff.at("sources").as_object().at("strict") == "default");
  CHECK(eff.at("session") == json::object{});

  // The session says no: its setting wins.
  auto own = t.policy({{"auto_checkpoint_turns", false}, {"origin", "me"}});
  CHECK(own.at("policy").as_object().at("auto_checkpoint_turns") == false);
  CHECK(own.at("sources").as_object().at("auto_checkpoint_turns") == "session");
  CHECK(t.start().at("skipped") == "disabled");
  // A session created later inherits the agent's.
  expect_ok(c.rpc("session.create", ids("a", "s2")));
  turns t2{d, "a", "s2"};
  CHECK(t2.start().at("created") == true);

  d.stop();
  d.start();
  eff = t.call("policy.get");
  CHECK(eff.at("policy").as_object().at("auto_checkpoint_turns") == false);
  CHECK(eff.at("policy").as_object().at("keep_auto") == 3);
  CHECK(eff.at("sources").as_object().at("keep_auto") == "agent");
  // null clears the session's field: the agent's applies again.
  auto cleared = t.policy({{"auto_checkpoint_turns", nullptr}});
  CHECK(cleared.at("sources").as_object().at("auto_checkpoint_turns") ==
        "agent");
  CHECK(t.start().at("created") == true);
  // The agent's level changes reach running sessions.
  expect_ok(
      c.rpc("policy.set", with(ids("a"), {{"auto_checkpoint_turns", false}})));
  CHECK(t.end().at("skipped") == "disabled");

  auto events = expect_ok(c.rpc("audit.list", {{"op", "policy.set"}}));
  const auto& list = events.at("events").as_array();
  REQUIRE(list.size() == 4);
  CHECK(list[0].as_object().at("level") == "agent");
  CHECK(list[1].as_object().at("level") == "session");
  CHECK(list[1].as_object().at("origin") == "me");
  CHECK(list[1].as_object().at("session_id") == "s");

  expect_error(
      c.rpc("policy.set", with(ids("a", "s"), {{"interval_seconds", "x"}})),
      400, "invalid_argument");
  expect_error(c.rpc("policy.set", with(ids("a", "s"), {{"keep_auto", -1}})),
               400, "invalid_argument");
  expect_error(c.rpc("policy.get", ids("nope")), 400, "not_found");
}

TEST_CASE("policy: keep_auto prunes old automatic checkpoints, never pinned "
          "or manual ones") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  turns t{d};
  t.policy({{"auto_checkpoint_turns", true}, {"keep_auto", 2}});
  t.call("checkpoint.create", {{"checkpoint_id", "m1"}});
  t.call("checkpoint.create", {{"checkpoint_id", "p1"},
                               {"origin", "turn-lifecycle"},
                               {"pinned", true}});
  auto a0 = str(t.start().at("checkpoint_id"));
  auto a1 = str(t.end().at("checkpoint_id"));
  auto third = t.end();
  auto a2 = str(third.at("checkpoint_id"));
  CHECK(third.at("pruned") == json::array{json::value(a0)});
  auto fourth = t.end();
  auto a3 = str(fourth.at("checkpoint_id"));
  CHECK(fourth.at("pruned") == json::array{json::value(a1)});
  auto kept = t.checkpoint_ids(); // sorted by id
  CHECK(std::set<std::string>(kept.begin(), kept.end()) ==
        std::set<std::string>{"m1", "p1", a2, a3});
  CHECK(kept.size() == 4);
  // Re-parented like checkpoint.delete.
  CHECK(t.record(a2).at("parent_id") == "p1");
  auto events = expect_ok(
      c.rpc("audit.list", {{"agent_id", "a"}, {"op", "checkpoint.delete"}}));
  const auto& list = events.at("events").as_array();
  REQUIRE(list.size() == 2);
  CHECK(list[0].as_object().at("origin") == "keep_auto");
  CHECK(list[0].as_object().at("checkpoint_id") == json::value(a0));
}

TEST_CASE("policy: a checkpoint after each run that exits 0") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  turns t{d};
  t.policy({{"auto_checkpoint_runs", true}});
  auto failed = wait_done(c, "a", "s", run_id(sh(c, "a", "s", "exit 3")));
  CHECK_FALSE(failed.contains("auto_checkpoint"));
  CHECK(t.checkpoint_ids().empty());
  auto id = run_id(sh(c, "a", "s", "echo made > out.txt"));
  auto done = wait_done(c, "a", "s", id);
  REQUIRE(done.contains("auto_checkpoint"));
  const auto& cp = done.at("auto_checkpoint").as_object();
  CHECK(cp.at("created") == true);
  CHECK(cp.at("event") == "run_end");
  auto ids_now = t.checkpoint_ids();
  REQUIRE(ids_now.size() == 1);
  auto rec = t.record(ids_now[0]);
  CHECK(rec.at("origin") == "policy-run");
  CHECK(metadata_of(rec).at("run_id") == json::value(id));
  CHECK(metadata_of(rec).at("auto") == true);
}

TEST_CASE("policy: interval checkpoints only when current/ changed") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  turns t{d};
  t.policy({{"interval_seconds", 1}});
  // No checkpoint yet: the first tick takes one.
  REQUIRE(eventually([&] { return t.checkpoint_ids().size() == 1; },
                     std::chrono::seconds{5}));
  auto first = t.record(t.checkpoint_ids()[0]);
  CHECK(first.at("origin") == "policy-interval");
  CHECK(metadata_of(first).at("event") == "interval");
  // Nothing changed: the next ticks take none.
  std::this_thread::sleep_for(std::chrono::milliseconds{2500});
  CHECK(t.checkpoint_ids().size() == 1);
  write_file(d.current("a", "s") + "/changed.txt", "new");
  REQUIRE(eventually([&] { return t.checkpoint_ids().size() == 2; },
                     std::chrono::seconds{5}));
  // Off again: no more ticks.
  t.policy({{"interval_seconds", 0}});
  write_file(d.current("a", "s") + "/changed.txt", "newer");
  std::this_thread::sleep_for(std::chrono::milliseconds{1500});
  CHECK(t.checkpoint_ids().size() == 2);
}

TEST_CASE("turns: turn ends arriving together are checkpointed one after "
          "the other") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  turns t{d};
  t.policy({{"auto_checkpoint_turns", true}});
  constexpr int n = 4;
  std::vector<http_response> replies(n);
  std::vector<std::thread> senders;
  for (int i = 0; i < n; ++i)
    senders.emplace_back([&d, &replies, i] {
      auto c = d.new_client();
      replies[i] =
          c->rpc("turn.end",
                 with(ids("a", "s"), {{"turn_id", "t" + std::to_string(i)}}));
    });
  for (auto& th : senders)
    th.join();
  for (const auto& r : replies)
    CHECK(expect_ok(r).at("created") == true);
  CHECK(t.status().at("turn_count") == n);
  CHECK(t.checkpoint_ids().size() == n);
}

TEST_CASE("policy: a run's automatic checkpoint that fails is non-blocking, "
          "or fails the run's waiters when strict") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  turns t{d};
  t.call("session.configure", {{"max_runs", 2}});
  t.policy({{"auto_checkpoint_runs", true}});
  // A background registration: every checkpoint answers conflict.
  t.call("runtime.register_background",
         {{"sandbox_id", "box"}, {"execution_id", "bg"}});
  auto done = wait_done(c, "a", "s", run_id(sh(c, "a", "s", "true")));
  CHECK(done.at("state") == "completed");
  REQUIRE(done.contains("auto_checkpoint"));
  const auto& cp = done.at("auto_checkpoint").as_object();
  CHECK(cp.at("created") == false);
  CHECK(cp.at("non_blocking") == true);
  CHECK(t.checkpoint_ids().empty());

  t.policy({{"strict", true}});
  auto late = run_id(sh(c, "a", "s", "sleep 0.5"));
  auto waited =
      c.rpc("process.wait",
            with(ids("a", "s"), {{"run_id", late}, {"timeout_ms", 30000}}));
  expect_error(waited, 400, "conflict");
  // The run itself completed; its row says so.
  auto row = t.call("process.get", {{"run_id", late}});
  CHECK(row.at("state") == "completed");
}
