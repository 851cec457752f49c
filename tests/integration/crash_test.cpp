// SPDX-License-Identifier: Apache-2.0
// Crash safety: the daemon dies (SIGKILL) at every step of checkpoint
// creation and rollback, and at random moments under load; after a restart
// every session must be exactly in the state before or after the operation.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/session_files.hpp"
#include "tests/fixtures/wait.hpp"

#include "guest/os/fs.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

using namespace allox;
using namespace allox::test;

namespace {

json::object list(http_client& c, const std::string& a, const std::string& s) {
  return expect_ok(c.rpc("checkpoint.list", ids(a, s)));
}

const json::object* find_record(const json::object& l, const std::string& id) {
  for (const auto& r : l.at("checkpoints").as_array())
    if (r.as_object().at("checkpoint_id") == json::value(id))
      return &r.as_object();
  return nullptr;
}

std::string head_of(const json::object& l) {
  return l.at("head").is_null() ? "" : std::string{l.at("head").as_string()};
}

std::string snapshot(const daemon_process& d, const std::string& a,
                     const std::string& s, const std::string& id) {
  return d.root() + "/agents/" + a + "/workspace/sessions/" + s +
         "/checkpoints/" + id;
}

/// No transient subvolumes are left in any of the given sessions.
void check_no_leftovers(const daemon_process& d, const std::string& a,
                        const std::string& s) {
  CHECK(session_entries(d, a, s, ".restore-").empty());
  CHECK(session_entries(d, a, s, ".discard-").empty());
}

} // namespace

TEST_CASE("crash: checkpoint creation is all or nothing at every step") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  if (!fault_injection_built(c))
    return; // release build
  // From the snapshot on, the checkpoint exists, recovered from its intent
  // record until the catalog has its row. The metadata is larger than one
  // extended attribute, so the record is split over several.
  struct point_case {
    const char* point;
    bool present;
  };
  json::object metadata{{"k", "v"}, {"pad", std::string(20000, 'p')}};
  for (auto [point, present] :
       {point_case{"checkpoint.create.before_intent", false},
        point_case{"checkpoint.create.before_snapshot", false},
        point_case{"checkpoint.create.after_snapshot", true},
        point_case{"checkpoint.create.before_row", true},
        point_case{"checkpoint.create.after_row", true}}) {
    std::string point_name{point};
    CAPTURE(point_name);
    std::string s = std::string{"s-"} + std::to_string(::rand());
    expect_ok(c.rpc("session.create", ids("a", s)));
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", s), {{"checkpoint_id", "base"}})));
    expect_ok(c.rpc("debug.fault", fault("a", s, point, "crash")));
    c.try_rpc("checkpoint.create",
              with(ids("a", s), {{"checkpoint_id", "n"},
                                 {"message", "msg"},
                                 {"metadata", metadata},
                                 {"pinned", true},
                                 {"origin", "crash-test"}}));
    CHECK(d.wait_exit(std::chrono::seconds{10}) == 128 + SIGKILL);
    d.start();
    auto l = list(c, "a", s);
    auto* rec = find_record(l, "n");
    CHECK((rec != nullptr) == present);
    if (rec != nullptr) {
      CHECK(head_of(l) == "n");
      CHECK(rec->at("message") == "msg");
      CHECK(rec->at("metadata") == metadata);
      CHECK(rec->at("pinned") == true);
      CHECK(rec->at("origin") == "crash-test");
      CHECK(rec->at("parent_id") == "base");
      CHECK(rec->at("missing") == false);
      CHECK(::access(snapshot(d, "a", s, "n").c_str(), F_OK) == 0);
      auto ops = audit_ops(c, with(ids("a", s), {{"op", "checkpoint.create"}}));
      CHECK(ops.size() == 2); // base and n, exactly once each
    } else {
      CHECK(rec == nullptr);
      CHECK(head_of(l) == "base");
      CHECK(::access(snapshot(d, "a", s, "n").c_str(), F_OK) != 0);
    }
    // Intent records are gone once the recovered rows are committed.
    auto checkpoints =
        d.root() + "/agents/a/workspace/sessions/" + s + "/checkpoints";
    CHECK(eventually([&] {
      auto names = os::list_dir(checkpoints);
      return names && std::none_of(names->begin(), names->end(),
                                   [](const std::string& n) {
                                     return n.rfind(".creating-", 0) == 0;
                                   });
    }));
    // The session works normally afterwards.
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", s), {{"checkpoint_id", "after"}})));
  }
}

TEST_CASE("crash: rollback restarts to exactly before or exactly the target "
          "at every step") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  if (!fault_injection_built(c))
    return;
  struct point_case {
    const char* point;
    bool committed;
  };
  for (auto [point, committed] : {
           point_case{"rollback.before_snapshot", false},
           point_case{"rollback.after_snapshot", false},
           point_case{"rollback.before_move_old", false},
           // Between the renames: undone (the journal stays `preparing`).
           point_case{"rollback.after_move_old", false},
           point_case{"rollback.before_move_new", false},
           point_case{"rollback.after_move_new", true},
           point_case{"rollback.after_commit", true},
           point_case{"purge.before_discard", true},
           point_case{"purge.after_discard", true},
       }) {
    std::string point_name{point};
    CAPTURE(point_name);
    std::string s = std::string{"s-"} + std::to_string(::rand());
    expect_ok(c.rpc("session.create", ids("a", s)));
    auto file = d.current("a", s) + "/f";
    write_file(file, "1");
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", s), {{"checkpoint_id", "c1"}})));
    write_file(file, "2");
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", s), {{"checkpoint_id", "c2"}})));
    write_file(file, "3");
    ::mkfifo((d.current("a", s) + "/.allox-tmp/fifo").c_str(), 0600);
    expect_ok(c.rpc("debug.fault", fault("a", s, point, "crash")));
    c.try_rpc("session.rollback", with(ids("a", s), {{"checkpoint_id", "c1"}}));
    CHECK(d.wait_exit(std::chrono::seconds{10}) == 128 + SIGKILL);
    d.start();
    check_no_leftovers(d, "a", s);
    auto l = list(c, "a", s);
    if (committed) {
      CHECK(read_file(file) == "1");
      CHECK(head_of(l) == "c1");
    } else {
      CHECK(read_file(file) == "3");
      CHECK(head_of(l) == "c2");
    }
    // Interrupted before its commit, the rollback is recovered from its
    // journal; after it, only the old tree was left to delete.
    auto ev = expect_ok(
        c.rpc("audit.list",
              with(ids("a", s), {{"op", "session.rollback.recovered"}})));
    const auto& events = ev.at("events").as_array();
    std::string p{point};
    if (p == "purge.after_discard") {
      CHECK(events.empty()); // nothing was left to recover
    } else {
      REQUIRE(events.size() == 1);
      auto outcome = events[0].as_object().at("outcome");
      if (p == "rollback.after_commit" || p == "purge.before_discard")
        CHECK(outcome == "aborted-orphan"); // only the old tree was left
      else
        CHECK(outcome == (committed ? "committed" : "aborted"));
    }
    // And the session works normally afterwards.
    expect_ok(c.rpc("session.rollback",
                    with(ids("a", s), {{"checkpoint_id", "c2"}})));
    CHECK(read_file(file) == "2");
  }
}

// Many checkpoints and rollbacks in several sessions while the daemon is
// killed at random moments. Each checkpoint's content names it (file
// `marker`), so after every restart we can check, for every session:
//   - no .restore-/.discard- entries;
//   - every snapshot holds its own marker (checkpoints are immutable);
//   - a create in flight either exists completely (head moved to it) or
//     not at all (no snapshot), and current/ holds its marker either way;
//   - a rollback in flight left current/ at the old head's content or the
//     target's, and the head agrees with the content.
TEST_CASE("crash: random SIGKILLs under checkpoint and rollback load") {
  daemon_process d;
  d.start();
  constexpr int sessions = 3;
  constexpr int min_rounds = 12;
  constexpr int max_rounds = 40;
  std::mt19937 rng{20261130};
  auto& c = d.client();
  struct model {
    std::string head;                 // what the daemon said last
    std::vector<std::string> created; // committed checkpoints
    std::string marker;               // content of current/marker
  };
  std::vector<model> models(sessions);
  auto sid = [](int i) {
    return "s" + std::to_string(i);
  };
  // The kill lands at a random moment inside a window sized from how long
  // a checkpoint takes on this machine, and the window adapts: a round
  // whose kill came after every operation narrows it, a round that
  // interrupted everything widens it. A fixed window proves nothing on a
  // machine where all operations finish before its kills.
  long window_us = 1000;
  for (int i = 0; i < sessions; ++i) {
    expect_ok(c.rpc("session.create", ids("a", sid(i))));
    write_file(d.current("a", sid(i)) + "/marker", "c0");
    auto t0 = std::chrono::steady_clock::now();
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", sid(i)), {{"checkpoint_id", "c0"}})));
    auto took = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - t0);
    window_us = std::max<long>(window_us, 2 * took.count());
    models[i] = {"c0", {"c0"}, "c0"};
  }
  int next_id = 1;
  int completed = 0, interrupted = 0;
  for (int round = 0; round < max_rounds; ++round) {
    if (round >= min_rounds && completed > 0 && interrupted > 0)
      break;
    CAPTURE(round);
    CAPTURE(window_us);
    int round_completed = completed, round_interrupted = interrupted;
    struct pending {
      bool create = false;
      std::string id; // new checkpoint or rollback target
      std::string old_head;
      std::string old_marker;
    };
    std::vector<pending> ops(sessions);
    std::vector<std::thread> workers;
    // Each session runs a few completed operations, then one that the kill
    // will probably interrupt.
    for (int i = 0; i < sessions; ++i) {
      auto& m = models[i];
      auto& op = ops[i];
      bool create = m.created.size() < 3 || rng() % 2 == 0;
      op.create = create;
      op.old_head = m.head;
      op.old_marker = m.marker;
      if (create) {
        op.id = "c" + std::to_string(next_id++);
        write_file(d.current("a", sid(i)) + "/marker", op.id);
        m.marker = op.id;
        op.old_marker = op.id;
      } else {
        op.id = m.created[rng() % m.created.size()];
      }
    }
    for (int i = 0; i < sessions; ++i)
      workers.emplace_back([&, i] {
        auto client = d.new_client();
        const auto& op = ops[i];
        if (op.create)
          client->try_rpc("checkpoint.create",
                          with(ids("a", sid(i)), {{"checkpoint_id", op.id}}));
        else
          client->try_rpc("session.rollback",
                          with(ids("a", sid(i)), {{"checkpoint_id", op.id}}));
      });
    std::this_thread::sleep_for(std::chrono::microseconds(
        static_cast<long>(rng() % static_cast<unsigned long>(window_us))));
    d.crash();
    for (auto& w : workers)
      w.join();
    d.start();
    for (int i = 0; i < sessions; ++i) {
      CAPTURE(i);
      auto& m = models[i];
      const auto& op = ops[i];
      check_no_leftovers(d, "a", sid(i));
      auto l = list(c, "a", sid(i));
      auto head = head_of(l);
      auto marker = read_file(d.current("a", sid(i)) + "/marker");
      for (const auto& id : m.created)
        CHECK(read_file(snapshot(d, "a", sid(i), id) + "/marker") == id);
      if (op.create) {
        CHECK(marker == op.id);
        auto* rec = find_record(l, op.id);
        bool snap =
            ::access(snapshot(d, "a", sid(i), op.id).c_str(), F_OK) == 0;
        if (rec != nullptr) {
          CHECK(head == op.id);
          CHECK(snap);
          CHECK(rec->at("parent_id") == json::value(op.old_head));
          m.created.push_back(op.id);
          ++completed;
        } else {
          CHECK(head == op.old_head);
          CHECK_FALSE(snap);
          ++interrupted;
        }
      } else {
        bool done = head == op.id && marker == op.id;
        bool undone = head == op.old_head && marker == op.old_marker;
        CHECK((done || undone));
        if (done)
          m.marker = op.id;
        // A rollback to the current head is indistinguishable either way.
        if (op.id != op.old_head)
          ++(done ? completed : interrupted);
      }
      m.head = head;
    }
    round_completed = completed - round_completed;
    round_interrupted = interrupted - round_interrupted;
    if (round_interrupted == 0 && round_completed > 0)
      window_us = std::max<long>(200, window_us * 2 / 3);
    else if (round_completed == 0 && round_interrupted > 0)
      window_us = window_us * 3 / 2;
  }
  MESSAGE("operations completed before the kill: "
          << completed << ", interrupted: " << interrupted);
  // Otherwise the kills missed every operation and proved nothing.
  CHECK(completed > 0);
  CHECK(interrupted > 0);
}

TEST_CASE("crash: a creation that fails after its snapshot keeps the snapshot "
          "and its record - a restart recovers it") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  if (!fault_injection_built(c))
    return;
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "s"), {{"checkpoint_id", "base"}})));
  expect_ok(
      c.rpc("debug.fault",
            fault("a", "s", "checkpoint.create.after_snapshot", "throw")));
  expect_error(
      c.rpc("checkpoint.create",
            with(ids("a", "s"), {{"checkpoint_id", "n"}, {"message", "kept"}})),
      500, "internal");
  // The name is taken on disk: a retry is refused and keeps the record.
  expect_error(c.rpc("checkpoint.create",
                     with(ids("a", "s"),
                          {{"checkpoint_id", "n"}, {"message", "other"}})),
               400, "already_exists");
  d.stop();
  d.start();
  auto l = list(c, "a", "s");
  auto* rec = find_record(l, "n");
  REQUIRE(rec != nullptr);
  CHECK(rec->at("message") == "kept");
  CHECK(rec->at("parent_id") == "base");
  CHECK(head_of(l) == "n");
}
