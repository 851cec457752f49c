#include "guest/store/catalog.hpp"

#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>
#include <sqlite3.h>

using namespace allox;

TEST_CASE("catalog: migrates a new database to the latest schema") {
  test::temp_dir dir;
  auto db = store::catalog::open(dir / "allox.db");
  REQUIRE(db);
  CHECK(db->schema_version() == 7);
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
  auto& o = page->as_object();
  CHECK(o.at("events").as_array().size() == 2);
  CHECK(o.at("has_more") == true);
  auto cursor = o.at("next_cursor").as_int64();
  auto rest = db->audit({"a", "s1", "", cursor, 100});
  CHECK(rest->as_object().at("events").as_array().size() == 3);
  CHECK(rest->as_object().at("has_more") == false);

  auto by_op = db->audit({"", "", "session.create", 0, 100});
  auto& ev = by_op->as_object().at("events").as_array();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].as_object().at("origin") == "o");
  CHECK(ev[0].as_object().at("session_id") == "s2");

  auto store_ev = db->audit({"", "", "store.initialize", 0, 10});
  auto& se = store_ev->as_object().at("events").as_array();
  REQUIRE(se.size() == 1);
  CHECK_FALSE(se[0].as_object().contains("agent_id"));
}
