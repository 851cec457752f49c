// SPDX-License-Identifier: Apache-2.0
#include "guest/store/catalog.hpp"
#include "messages/results/admin_json.hpp"

#include "guest/store/create_intent.hpp"
#include "tests/fixtures/stale_reader.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <filesystem>
#include <map>

using namespace allox;
using namespace std::string_literals;

TEST_CASE("catalog: migrates a new database to the latest schema") {
  test::temp_dir dir;
  auto db = store::catalog::open(dir / "allox.db");
  REQUIRE(db);
  CHECK(db->schema_version() == 11);
  auto snap = db->load();
  REQUIRE(snap);
  CHECK(snap->agents.empty());
}

TEST_CASE("catalog: writes are atomic and survive reopening") {
  test::temp_dir dir;
  {
    auto db = store::catalog::open(dir / "allox.db");
    REQUIRE(db);
    metadata_write w;
    w.put_agents.push_back({"a", 1, false});
    w.put_sessions.push_back({"a", "s1", 2, false, {}, {}});
    w.put_sessions.push_back({"a", "s2", 3, false, {}, {}});
    w.audit.push_back({10, "session.create", "a", "s1", R"({"origin":"x"})"});
    REQUIRE_FALSE(db->apply({&w}));
    metadata_write mark;
    mark.put_sessions.push_back({"a", "s2", 3, true, {}, {}});
    REQUIRE_FALSE(db->apply({&mark}));
  }
  auto db = store::catalog::open(dir / "allox.db");
  REQUIRE(db);
  auto snap = db->load();
  REQUIRE(snap);
  REQUIRE(snap->sessions.size() == 2);
  CHECK_FALSE(snap->sessions[0].deleting);
  CHECK(snap->sessions[1].deleting);
  metadata_write del;
  del.delete_agents.push_back("a");
  REQUIRE_FALSE(db->apply({&del}));
  snap = db->load();
  CHECK(snap->agents.empty());
  CHECK(snap->sessions.empty());
}

TEST_CASE("catalog: an empty message and an absent one stay apart through "
          "the catalog and the intent record") {
  test::temp_dir dir;
  checkpoint_row empty;
  empty.agent_id = "a";
  empty.session_id = "s";
  empty.checkpoint_id = "empty";
  empty.created_at_ns = 1;
  empty.origin = "test";
  empty.message = ""s;
  empty.metadata = R"({"k":1})"s;
  auto absent = empty;
  absent.checkpoint_id = "absent";
  absent.created_at_ns = 2;
  absent.message = caf::none;
  absent.metadata = caf::none;
  absent.parent_id = "empty"s;
  {
    auto db = store::catalog::open(dir / "allox.db");
    REQUIRE(db);
    metadata_write w;
    w.put_agents.push_back({"a", 1, false});
    w.put_sessions.push_back({"a", "s", 1, false, caf::none, caf::none});
    w.put_checkpoints = {empty, absent};
    REQUIRE_FALSE(db->apply({&w}));
  }
  auto db = store::catalog::open(dir / "allox.db");
  REQUIRE(db);
  auto snap = db->load();
  REQUIRE(snap);
  REQUIRE(snap->checkpoints.size() == 2);
  std::map<std::string, checkpoint_row> back;
  for (auto& c : snap->checkpoints)
    back[c.checkpoint_id] = c;
  CHECK(back.at("empty").message == ""s);
  CHECK(back.at("empty").metadata == R"({"k":1})"s);
  CHECK_FALSE(back.at("empty").parent_id);
  CHECK_FALSE(back.at("absent").message);
  CHECK_FALSE(back.at("absent").metadata);
  CHECK(back.at("absent").parent_id == "empty"s);
  REQUIRE(snap->sessions.size() == 1);
  CHECK_FALSE(snap->sessions[0].head);
  CHECK_FALSE(snap->sessions[0].exec_settings);
  // Absent values are stored as NULL, a present empty message as "".
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open((dir / "allox.db").c_str(), &raw) == SQLITE_OK);
  auto nulls = [raw](const char* sql) {
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(raw, sql, -1, &st, nullptr) == SQLITE_OK);
    std::string out;
    while (sqlite3_step(st) == SQLITE_ROW)
      for (int i = 0; i < sqlite3_column_count(st); ++i)
        out += sqlite3_column_type(st, i) == SQLITE_NULL ? 'N' : 'V';
    sqlite3_finalize(st);
    return out;
  };
  CHECK(nulls("SELECT message, metadata, parent_id FROM checkpoints ORDER BY "
              "created_at_ns") == "VVNNNV");
  CHECK(nulls("SELECT head, exec_settings FROM sessions") == "NN");
  sqlite3_close(raw);
  // The intent record keeps them apart too.
  store::layout l{dir.path()};
  std::filesystem::create_directories(l.checkpoints_dir("a", "s"));
  for (const auto& row : {empty, absent}) {
    REQUIRE_FALSE(store::write_create_intent(l, row));
    auto read = store::read_create_intent(l, "a", "s", row.checkpoint_id);
    REQUIRE(read);
    CHECK(read->message == row.message);
    CHECK(read->metadata == row.metadata);
    CHECK(read->parent_id == row.parent_id);
  }
  CHECK(store::read_create_intent(l, "a", "s", "empty")->message == ""s);
  CHECK_FALSE(store::read_create_intent(l, "a", "s", "absent")->message);
}

TEST_CASE("catalog: a newer schema is refused, not downgraded") {
  test::temp_dir dir;
  auto path = dir / "allox.db";
  REQUIRE(store::catalog::open(path));
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw, "PRAGMA user_version=99", nullptr, nullptr,
                       nullptr) == SQLITE_OK);
  sqlite3_close(raw);
  auto db = store::catalog::open(path);
  REQUIRE_FALSE(db);
  CHECK(message_of(db.error()).find("newer than this daemon") !=
        std::string::npos);
}

TEST_CASE("catalog: audit filters and cursor paging") {
  test::temp_dir dir;
  auto db = store::catalog::open(dir / "allox.db");
  REQUIRE(db);
  metadata_write w;
  for (int i = 0; i < 5; ++i)
    w.audit.push_back({i, "checkpoint.create", "a", "s1", "{}"});
  w.audit.push_back({9, "session.create", "a", "s2", R"({"origin":"o"})"});
  w.audit.push_back({10, "store.initialize", "", "", "{}"});
  REQUIRE_FALSE(db->apply({&w}));

  auto page = db->audit({"a", "s1", "", 0, 2});
  REQUIRE(page);
  // As the wire shows it (audit.list).
  auto o = to_json(*page);
  CHECK(o.at("events").as_array().size() == 2);
  CHECK(o.at("has_more") == true);
  auto cursor = o.at("next_cursor").as_int64();
  auto rest = db->audit({"a", "s1", "", cursor, 100});
  CHECK(rest->events.size() == 3);
  CHECK(to_json(*rest).at("has_more") == false);

  auto by_op = db->audit({"", "", "session.create", 0, 100});
  auto by_op_json = to_json(*by_op);
  auto& ev = by_op_json.at("events").as_array();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].as_object().at("origin") == "o");
  CHECK(ev[0].as_object().at("session_id") == "s2");

  auto store_ev = db->audit({"", "", "store.initialize", 0, 10});
  auto store_json = to_json(*store_ev);
  auto& se = store_json.at("events").as_array();
  REQUIRE(se.size() == 1);
  CHECK_FALSE(se[0].as_object().contains("agent_id"));
}

TEST_CASE("catalog: turn states and policies survive reopening") {
  test::temp_dir dir;
  {
    auto db = store::catalog::open(dir / "allox.db");
    REQUIRE(db);
    metadata_write w;
    w.put_agents.push_back({"a", 1, false});
    w.put_sessions.push_back({"a", "s", 2, false, {}, {}});
    w.set_turn_states.push_back({"a", "s", R"({"turn_count":3})"s});
    w.set_policies.push_back({"a", "s", R"({"strict":true})"s});
    w.set_policies.push_back({"a", "", R"({"keep_auto":2})"s});
    REQUIRE_FALSE(db->apply({&w}));
  }
  auto db = store::catalog::open(dir / "allox.db");
  REQUIRE(db);
  auto snap = db->load();
  REQUIRE(snap);
  REQUIRE(snap->agents.size() == 1);
  CHECK(snap->agents[0].policy == R"({"keep_auto":2})"s);
  REQUIRE(snap->sessions.size() == 1);
  CHECK(snap->sessions[0].turn_state == R"({"turn_count":3})"s);
  CHECK(snap->sessions[0].policy == R"({"strict":true})"s);
  // A session's own reload (its actor's restart) carries them too.
  auto one = db->load_session("a", "s");
  REQUIRE(one);
  REQUIRE(one->sessions.size() == 1);
  CHECK(one->sessions[0].turn_state == R"({"turn_count":3})"s);
  // Cleared: NULL again.
  metadata_write clear;
  clear.set_policies.push_back({"a", "", caf::none});
  REQUIRE_FALSE(db->apply({&clear}));
  CHECK(db->load()->agents[0].policy == caf::none);
}

TEST_CASE("catalog: share policies and front records survive reopening and "
          "a session's reload") {
  test::temp_dir dir;
  {
    auto db = store::catalog::open(dir / "allox.db");
    REQUIRE(db);
    metadata_write w;
    w.put_agents.push_back({"a", 1, false});
    w.put_sessions.push_back({"a", "s", 2, false, {}, {}});
    w.put_sessions.push_back({"a", "t", 3, false, {}, {}});
    w.set_share_policies.push_back(
        {"a", "s", R"({"enabled":true,"scope":".","permission":"write"})"s});
    w.set_front_records.push_back({"a", "t", R"({"front":"e2b"})"s});
    REQUIRE_FALSE(db->apply({&w}));
  }
  auto db = store::catalog::open(dir / "allox.db");
  REQUIRE(db);
  auto snap = db->load();
  REQUIRE(snap);
  REQUIRE(snap->sessions.size() == 2);
  CHECK(snap->sessions[0].share_policy ==
        R"({"enabled":true,"scope":".","permission":"write"})"s);
  // Never enabled: none.
  CHECK(snap->sessions[1].share_policy == caf::none);
  // A front's record comes back with its row; other rows have none.
  CHECK(snap->sessions[0].front_record == caf::none);
  CHECK(snap->sessions[1].front_record == R"({"front":"e2b"})"s);
  auto one = db->load_session("a", "s");
  REQUIRE(one);
  REQUIRE(one->sessions.size() == 1);
  CHECK(one->sessions[0].share_policy ==
        R"({"enabled":true,"scope":".","permission":"write"})"s);
}

TEST_CASE("catalog: write sets survive reopening and go with their "
          "checkpoint, session or agent") {
  test::temp_dir dir;
  auto ids = [](store::catalog& db, const std::string& s) {
    auto page = db.write_sets({"a", s});
    REQUIRE(page);
    std::vector<std::string> out;
    for (const auto& r : page->rows)
      out.push_back(r.checkpoint_id + "=" + r.body);
    std::sort(out.begin(), out.end());
    return out;
  };
  {
    auto db = store::catalog::open(dir / "allox.db");
    REQUIRE(db);
    metadata_write w;
    w.durable = false;
    for (const char* c : {"c1", "c2", "c3"})
      w.put_write_sets.push_back({"a", "s", c, std::string{"{"} + c + "}"});
    w.put_write_sets.push_back({"a", "t", "c1", "{t}"});
    w.put_write_sets.push_back({"b", "s", "c1", "{b}"});
    REQUIRE_FALSE(db->apply({&w}));
  }
  auto db = store::catalog::open(dir / "allox.db");
  REQUIRE(db);
  CHECK(ids(*db, "s") ==
        std::vector<std::string>{"c1={c1}", "c2={c2}", "c3={c3}"});
  // A deletion's fold re-writes a child in the same batch.
  metadata_write del;
  checkpoint_row c2;
  c2.agent_id = "a";
  c2.session_id = "s";
  c2.checkpoint_id = "c2";
  del.delete_checkpoints.push_back(c2);
  del.put_write_sets.push_back({"a", "s", "c3", "{c2+c3}"});
  REQUIRE_FALSE(db->apply({&del}));
  CHECK(ids(*db, "s") == std::vector<std::string>{"c1={c1}", "c3={c2+c3}"});
  metadata_write gone;
  gone.delete_sessions.push_back({"a", "s"});
  REQUIRE_FALSE(db->apply({&gone}));
  CHECK(ids(*db, "s").empty());
  CHECK(ids(*db, "t") == std::vector<std::string>{"c1={t}"});
  metadata_write agent;
  agent.delete_agents.push_back("a");
  REQUIRE_FALSE(db->apply({&agent}));
  CHECK(ids(*db, "t").empty());
  auto other = db->write_sets({"b", "s"});
  REQUIRE(other);
  CHECK(other->rows.size() == 1);
}

namespace {

/// Commits one unsynced audit record of 2 KB: a page or so of log.
void padded_write(store::catalog& db, int64_t i) {
  metadata_write w;
  w.durable = false;
  w.audit.push_back({i, "file.write", "a", "s",
                     R"({"pad":")" + std::string(2000, 'x') + R"("})"});
  REQUIRE_FALSE(db.apply({&w}));
}

} // namespace

TEST_CASE("catalog: commits never checkpoint the write-ahead log, "
          "checkpoint() does, and the log starts over") {
  test::temp_dir dir;
  auto db = store::catalog::open(dir / "allox.db");
  REQUIRE(db);
  auto wal = dir / "allox.db-wal";
  // SQLite's automatic checkpoint would have run at 1,000 pages and the
  // next commit would have started the log over.
  int i = 0;
  for (; db->wal_pages() <= 1200 && i < 5000; ++i)
    padded_write(*db, i);
  CHECK(db->wal_pages() > 1200);
  CHECK(std::filesystem::file_size(wal) > 1200u * 4096u);
  auto left = db->checkpoint();
  REQUIRE(left);
  CHECK(*left == 0);
  CHECK(db->wal_pages() == 0);
  metadata_write one;
  one.durable = false;
  one.audit.push_back({i, "file.write", "a", "s", "{}"});
  REQUIRE_FALSE(db->apply({&one}));
  CHECK(db->wal_pages() > 0);
  CHECK(db->wal_pages() < 10);
  audit_query q;
  q.limit = 1;
  auto page = db->audit(q);
  REQUIRE(page);
  CHECK(page->has_more);
}

TEST_CASE("catalog: sync_log syncs the log of unsynced commits from another "
          "descriptor, and finds nothing to do without a log") {
  test::temp_dir dir;
  auto path = dir / "allox.db";
  {
    auto db = store::catalog::open(path);
    REQUIRE(db);
    metadata_write w;
    w.durable = false;
    w.put_agents.push_back({"a", 1, false});
    REQUIRE_FALSE(db->apply({&w}));
    CHECK(std::filesystem::exists(path + "-wal"));
    CHECK_FALSE(store::catalog::sync_log(path));
  }
  // The last connection closed: its log went into the database file.
  CHECK_FALSE(std::filesystem::exists(path + "-wal"));
  CHECK_FALSE(store::catalog::sync_log(path));
  auto db = store::catalog::open(path);
  REQUIRE(db);
  CHECK(db->load()->agents.size() == 1);
}

TEST_CASE("catalog: a checkpoint leaves what a reader of an older state "
          "still needs, and says how much") {
  test::temp_dir dir;
  auto path = dir / "allox.db";
  auto db = store::catalog::open(path);
  REQUIRE(db);
  padded_write(*db, 0);
  // Another connection (an operator's sqlite3, say) in a read transaction.
  test::stale_reader reader{path};
  for (int64_t i = 1; i < 50; ++i)
    padded_write(*db, i);
  auto pages = db->wal_pages();
  auto left = db->checkpoint();
  REQUIRE(left);
  CHECK(*left > 0);
  CHECK(db->wal_pages() == pages); // the log cannot start over
  reader.release();
  left = db->checkpoint();
  REQUIRE(left);
  CHECK(*left == 0);
  CHECK(db->wal_pages() == 0);
}
