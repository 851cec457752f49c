// SPDX-License-Identifier: Apache-2.0
// The runs table: rows written in batches, pages served by the index,
// start-up loading only what recovery needs, deletions cascading.
#include "guest/store/catalog.hpp"

#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace allox;

namespace {

run_record run(const std::string& id, int64_t created, const std::string& state,
               const std::string& session = "s", bool fences = false) {
  json::object row{{"run_id", id}, {"state", state},
                   {"session_fenced", fences}};
  return {id, "a", session, created, state, fences, json::serialize(row)};
}

store::catalog open(const test::temp_dir& dir) {
  auto db = store::catalog::open(dir / "allox.db");
  REQUIRE(db);
  return std::move(*db);
}

} // namespace

TEST_CASE("catalog runs: pages in creation order, with a cursor") {
  test::temp_dir dir;
  auto db = open(dir);
  metadata_write w;
  w.durable = false;
  for (int i = 0; i < 25; ++i)
    w.put_runs.push_back(run("r" + std::to_string(100 + i), 1000 - i * 10,
                             "completed"));
  w.put_runs.push_back(run("other", 1, "completed", "s2"));
  REQUIRE_FALSE(db.apply({&w}));
  run_query q{"", "a", "s", "", 10};
  std::vector<std::string> seen;
  for (int pages = 0; pages < 5; ++pages) {
    auto page = db.runs(q);
    REQUIRE(page);
    for (const auto& r : page->runs)
      seen.push_back(r.run_id);
    if (!page->has_more)
      break;
    q.after = page->runs.back().run_id;
  }
  REQUIRE(seen.size() == 25);
  // Oldest first: r124 was created first.
  CHECK(seen.front() == "r124");
  CHECK(seen.back() == "r100");
  q.limit = 0;
  q.after.clear();
  auto all = db.runs(q);
  REQUIRE(all);
  CHECK(all->runs.size() == 25);
  CHECK_FALSE(all->has_more);
  q.after = "nope";
  q.limit = 5;
  auto bad = db.runs(q);
  REQUIRE_FALSE(bad);
  CHECK(code_of(bad.error()) == errc::invalid_argument);
}

TEST_CASE("catalog runs: the latest row wins, and one run is found by id") {
  test::temp_dir dir;
  auto db = open(dir);
  metadata_write a;
  a.put_runs.push_back(run("r1", 1, "starting"));
  metadata_write b;
  b.durable = false;
  b.put_runs.push_back(run("r1", 1, "running"));
  REQUIRE_FALSE(db.apply({&a, &b}));
  auto one = db.runs(run_query{"r1", "", "", "", 0});
  REQUIRE(one);
  REQUIRE(one->runs.size() == 1);
  CHECK(one->runs[0].state == "running");
  auto none = db.runs(run_query{"r2", "", "", "", 0});
  REQUIRE(none);
  CHECK(none->runs.empty());
}

TEST_CASE("catalog runs: start-up loads live and fencing runs only") {
  test::temp_dir dir;
  {
    auto db = open(dir);
    metadata_write w;
    w.put_runs.push_back(run("done", 1, "completed"));
    w.put_runs.push_back(run("live", 2, "running"));
    w.put_runs.push_back(run("fence", 3, "interrupted", "s", true));
    w.mark_runs_imported = true;
    REQUIRE_FALSE(db.apply({&w}));
  }
  auto db = open(dir);
  auto snap = db.load();
  REQUIRE(snap);
  CHECK(snap->runs_imported);
  REQUIRE(snap->runs.size() == 2);
  CHECK(snap->runs[0].run_id == "live");
  CHECK(snap->runs[1].run_id == "fence");
  // session.unfence releases the fence, in the row too.
  metadata_write release;
  release.release_runs.push_back("fence");
  REQUIRE_FALSE(db.apply({&release}));
  auto after = db.load();
  REQUIRE(after);
  REQUIRE(after->runs.size() == 1);
  auto row = db.runs(run_query{"fence", "", "", "", 0});
  REQUIRE(row);
  CHECK(json::parse(row->runs[0].row).at("session_fenced") == false);
}

TEST_CASE("catalog runs: deleting a session or agent forgets its runs") {
  test::temp_dir dir;
  auto db = open(dir);
  metadata_write w;
  w.put_agents.push_back({"a", 1, false});
  w.put_sessions.push_back({"a", "s", 1, false, {}, {}});
  w.put_sessions.push_back({"a", "s2", 1, false, {}, {}});
  w.put_runs.push_back(run("r1", 1, "completed"));
  w.put_runs.push_back(run("r2", 2, "completed", "s2"));
  REQUIRE_FALSE(db.apply({&w}));
  metadata_write del;
  del.delete_sessions.push_back({"a", "s"});
  REQUIRE_FALSE(db.apply({&del}));
  CHECK(db.runs(run_query{"r1", "", "", "", 0})->runs.empty());
  CHECK(db.runs(run_query{"r2", "", "", "", 0})->runs.size() == 1);
  metadata_write gone;
  gone.delete_agents.push_back("a");
  REQUIRE_FALSE(db.apply({&gone}));
  CHECK(db.runs(run_query{"r2", "", "", "", 0})->runs.empty());
}
