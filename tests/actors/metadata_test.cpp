// SPDX-License-Identifier: Apache-2.0
// The METADATA actor under CAF's deterministic scheduler, with a real
// SQLite catalog in a scratch directory.
#include "actors/metadata.hpp"

#include "guest/os/sched.hpp"
#include "messages/results/stats_json.hpp"
#include "tests/fixtures/deterministic.hpp"
#include "tests/fixtures/stale_reader.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>
#include <filesystem>
#include <sqlite3.h>
#include <string>

using namespace allox;
using allox::test::deterministic;

namespace {

metadata_write session_write(const std::string& sid) {
  metadata_write w;
  w.put_sessions.push_back({"a", sid, 1, false, {}, {}});
  w.audit.push_back({1, "session.create", "a", sid, "{}"});
  return w;
}

/// A fresh catalog in `dir`, shared the way the daemon shares it.
std::shared_ptr<store::catalog> open_catalog(const test::temp_dir& dir) {
  auto db = store::catalog::open(dir / "allox.db");
  REQUIRE(db);
  return std::make_shared<store::catalog>(std::move(*db));
}

/// Threads of this process under SCHED_BATCH.
int batch_threads() {
  int n = 0;
  for (auto& task : std::filesystem::directory_iterator{"/proc/self/task"})
    if (os::uses_batch_scheduling(std::stoi(task.path().filename())))
      ++n;
  return n;
}

/// A write of a padded audit record: a few pages of log per commit.
metadata_write padded_write(int64_t i) {
  metadata_write w;
  w.durable = false;
  w.audit.push_back({i, "file.write", "a", "s",
                     R"({"pad":")" + std::string(2000, 'x') + R"("})"});
  return w;
}

/// Sends the next padded write and takes its acknowledgement.
void write_padded(caf::scoped_actor& self, const metadata_actor& m,
                  caf::scheduler::test_coordinator& sched, int64_t& i) {
  self->send(m, atom::write_v, padded_write(i++));
  sched.run();
  self->receive([](caf::ok_atom) {},
                caf::after(std::chrono::seconds{0}) >> [] { FAIL("no ack"); });
}

/// One of the actor's counters, from its stats as system.dump spells them.
int64_t counter_of(caf::scoped_actor& self, const metadata_actor& m,
                   caf::scheduler::test_coordinator& sched, const char* name) {
  int64_t n = -1;
  self->send(m, atom::stats_v);
  sched.run();
  self->receive(
      [&](actor_stats& s) {
        n = to_json(s).at("counters").as_object().at(name).to_number<int64_t>();
      },
      caf::after(std::chrono::seconds{0}) >> [] { FAIL("no dump"); });
  return n;
}

} // namespace

TEST_CASE_FIXTURE(deterministic,
                  "metadata: writes queued together commit in one "
                  "transaction (group commit)") {
  test::temp_dir dir;
  auto shared = open_catalog(dir);
  auto m = sys.spawn(metadata, shared, dir / "allox.db");
  {
    caf::scoped_actor self{sys};
    for (auto sid : {"s1", "s2", "s3"})
      self->send(m, atom::write_v, session_write(sid));
    sched.run();
    int acks = 0;
    for (int i = 0; i < 3; ++i)
      self->receive([&](caf::ok_atom) { ++acks; },
                    caf::after(std::chrono::seconds{0}) >> [] {});
    CHECK(acks == 3);
    CHECK(counter_of(self, m, sched, "commits") == 1);
    CHECK(counter_of(self, m, sched, "batches") == 3);
    self->send(m, atom::load_v);
    sched.run();
    self->receive(
        [&](catalog_snapshot& snap) { CHECK(snap.sessions.size() == 3); },
        caf::after(std::chrono::seconds{0}) >> [] { FAIL("no snapshot"); });
  }
  caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  sched.run();
}

TEST_CASE_FIXTURE(deterministic, "metadata: a failed commit fails every "
                                 "waiting writer") {
  test::temp_dir dir;
  auto shared = open_catalog(dir);
  auto m = sys.spawn(metadata, shared, dir / "allox.db");
  {
    caf::scoped_actor self{sys};
    // Break the database underneath the actor so the next commit fails.
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open((dir / "allox.db").c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw, "DROP TABLE audit", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    sqlite3_close(raw);
    self->send(m, atom::write_v, session_write("s1"));
    self->send(m, atom::write_v, session_write("s2"));
    sched.run();
    int errors = 0;
    for (int i = 0; i < 2; ++i)
      self->receive([&](caf::ok_atom) { FAIL("commit should fail"); },
                    [&](caf::error& err) {
                      CHECK(code_of(err) == errc::internal);
                      ++errors;
                    },
                    caf::after(std::chrono::seconds{0}) >> [] {});
    CHECK(errors == 2);
    self->send(m, atom::load_v);
    sched.run();
    self->receive([&](catalog_snapshot& snap) { CHECK(snap.sessions.empty()); },
                  [&](caf::error&) { FAIL("load failed"); },
                  caf::after(std::chrono::seconds{0}) >>
                      [] { FAIL("no snapshot"); });
  }
  caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  sched.run();
}

TEST_CASE_FIXTURE(deterministic,
                  "metadata: one agent's rows load alone, in the full load's "
                  "order (restarting its actor)") {
  test::temp_dir dir;
  auto shared = open_catalog(dir);
  auto m = sys.spawn(metadata, shared, dir / "allox.db");
  {
    caf::scoped_actor self{sys};
    metadata_write w;
    for (auto aid : {"a", "b"}) {
      w.put_agents.push_back({aid, 1, false, caf::none});
      for (auto sid : {"s2", "s1"}) {
        w.put_sessions.push_back({aid, sid, 1, false, {}, {}});
        checkpoint_row c;
        c.agent_id = aid;
        c.session_id = sid;
        c.checkpoint_id = std::string{"c-"} + sid;
        c.created_at_ns = 1;
        c.origin = "test";
        w.put_checkpoints.push_back(c);
      }
    }
    w.set_policies.push_back({"a", "", std::string{R"({"interval_s":5})"}});
    self->send(m, atom::write_v, std::move(w));
    sched.run();
    self->receive([](caf::ok_atom) {}, caf::after(std::chrono::seconds{0}) >>
                                           [] { FAIL("no ack"); });
    self->send(m, atom::load_v, std::string{"a"});
    sched.run();
    self->receive(
        [&](catalog_snapshot& snap) {
          REQUIRE(snap.agents.size() == 1);
          CHECK(snap.agents[0].agent_id == "a");
          CHECK(snap.agents[0].policy == std::string{R"({"interval_s":5})"});
          REQUIRE(snap.sessions.size() == 2);
          CHECK(snap.sessions[0].session_id == "s1");
          CHECK(snap.sessions[1].session_id == "s2");
          REQUIRE(snap.checkpoints.size() == 2);
          CHECK(snap.checkpoints[0].checkpoint_id == "c-s1");
          for (const auto& s : snap.sessions)
            CHECK(s.agent_id == "a");
          for (const auto& c : snap.checkpoints)
            CHECK(c.agent_id == "a");
        },
        [&](caf::error&) { FAIL("load failed"); },
        caf::after(std::chrono::seconds{0}) >> [] { FAIL("no snapshot"); });
    // An agent the catalog does not know has no rows.
    self->send(m, atom::load_v, std::string{"zz"});
    sched.run();
    self->receive(
        [&](catalog_snapshot& snap) {
          CHECK(snap.agents.empty());
          CHECK(snap.sessions.empty());
          CHECK(snap.checkpoints.empty());
        },
        [&](caf::error&) { FAIL("load failed"); },
        caf::after(std::chrono::seconds{0}) >> [] { FAIL("no snapshot"); });
  }
  caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  sched.run();
}

TEST_CASE("metadata: its own thread does not preempt the request path on "
          "wake-up") {
  test::temp_dir dir;
  auto shared = open_catalog(dir);
  caf::actor_system_config cfg;
  add_message_types(cfg);
  caf::actor_system sys{cfg};
  auto before = batch_threads();
  auto m = sys.spawn<caf::detached>(metadata, shared, dir / "allox.db");
  {
    caf::scoped_actor self{sys};
    self->request(m, caf::infinite, atom::load_v)
        .receive([](catalog_snapshot&) {},
                 [](caf::error&) { FAIL("load failed"); });
  }
  CHECK(batch_threads() == before + 1);
  CHECK_FALSE(os::uses_batch_scheduling());
  caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
}

TEST_CASE_FIXTURE(deterministic, "metadata: on the test scheduler it leaves "
                                 "the caller's thread alone") {
  test::temp_dir dir;
  auto shared = open_catalog(dir);
  auto m = sys.spawn(metadata, shared, dir / "allox.db");
  sched.run();
  CHECK_FALSE(os::uses_batch_scheduling());
  caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  sched.run();
}

TEST_CASE_FIXTURE(deterministic,
                  "metadata: the write-ahead log is checkpointed once the "
                  "catalog is idle, or at once at its bound") {
  test::temp_dir dir;
  auto shared = open_catalog(dir);
  auto m = sys.spawn(metadata, shared, dir / "allox.db");
  {
    caf::scoped_actor self{sys};
    int64_t i = 0;
    auto write = [&] {
      write_padded(self, m, sched, i);
    };
    while (shared->wal_pages() <= wal_idle_pages)
      write();
    // Past SQLite's own threshold, yet no commit checkpointed.
    write();
    CHECK(shared->wal_pages() > wal_idle_pages);
    sched.advance_time(wal_idle - std::chrono::milliseconds{200});
    sched.run();
    write(); // the catalog is busy again: the tick waits for quiet
    sched.advance_time(std::chrono::milliseconds{200});
    sched.run();
    CHECK(shared->wal_pages() > wal_idle_pages);
    CHECK(counter_of(self, m, sched, "wal_checkpoints") == 0);
    sched.advance_time(wal_idle);
    sched.run();
    CHECK(shared->wal_pages() == 0);
    CHECK(counter_of(self, m, sched, "wal_checkpoints") == 1);
    // A load that never pauses: the checkpoint comes with the commit that
    // reaches the bound, with no time passing.
    int peak = 0;
    do {
      write();
      peak = std::max(peak, shared->wal_pages());
    } while (shared->wal_pages() != 0 && i < 20000);
    CHECK(peak > wal_max_pages * 9 / 10); // not at the idle threshold
    CHECK(counter_of(self, m, sched, "wal_checkpoints") == 2);
  }
  caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  sched.run();
}

TEST_CASE_FIXTURE(deterministic,
                  "metadata: a reader that holds the log back does not turn "
                  "every commit into a checkpoint") {
  test::temp_dir dir;
  auto shared = open_catalog(dir);
  auto m = sys.spawn(metadata, shared, dir / "allox.db");
  {
    caf::scoped_actor self{sys};
    int64_t i = 0;
    auto write = [&] {
      write_padded(self, m, sched, i);
    };
    write();
    test::stale_reader reader{dir / "allox.db"};
    while (counter_of(self, m, sched, "wal_checkpoints") == 0 && i < 20000)
      write();
    REQUIRE(counter_of(self, m, sched, "wal_checkpoints") == 1);
    // The log could not start over. Another thousand pages of commits:
    // no checkpoint, where each commit past the bound would have made one.
    auto held = shared->wal_pages();
    CHECK(held >= wal_max_pages);
    while (shared->wal_pages() < held + wal_idle_pages)
      write();
    CHECK(counter_of(self, m, sched, "wal_checkpoints") == 1);
    // The reader gone, the next bound's checkpoint empties the log.
    reader.release();
    while (shared->wal_pages() != 0 && i < 40000)
      write();
    CHECK(counter_of(self, m, sched, "wal_checkpoints") == 2);
  }
  caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  sched.run();
}
