// SPDX-License-Identifier: Apache-2.0
// Start-up recovery of runs: a live run of this boot that left a status is
// adopted, what a crash interrupted fences its session, and rows of older
// stores (state.json files) are imported once.
#include "guest/store/run_recovery.hpp"

#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <string>

using namespace allox;

namespace {

json::object row(const std::string& id, const std::string& state,
                 bool fenced = false, const std::string& session = "s") {
  return json::object{
      {"run_id", id},
      {"agent_id", "a"},
      {"session_id", session},
      {"state", state},
      {"created_ns", 5},
      {"session_fenced", fenced},
      {"processes", json::object{{"7", json::object{{"alive", true}}}}}};
}

/// Saves a row as an older store did: <root>/<run>/state.json.
void save_state_file(const std::string& root, const json::object& r) {
  auto dir = root + "/" + std::string{r.at("run_id").as_string()};
  ::mkdir(dir.c_str(), 0700);
  test::write_file(dir + "/state.json", json::serialize(r));
}

json::object parsed(const run_record& rec) {
  return json::parse(rec.row).as_object();
}

} // namespace

TEST_CASE("run recovery: a run a crash interrupted fences its session") {
  test::temp_dir root;
  catalog_snapshot snap;
  snap.runs_imported = true;
  snap.runs.push_back(store::record_of(row("r1", "running")));
  snap.runs.push_back(store::record_of(row("r2", "completed", true)));
  metadata_write changes;
  auto found = store::recover_runs(snap, root.path(), "boot", changes);
  REQUIRE(found);
  CHECK(found->adopted.empty());
  auto& ids = found->fenced[{"a", "s"}];
  CHECK(ids == std::vector<std::string>{"r1", "r2"});
  // Only the interrupted run is rewritten; the other already fenced.
  REQUIRE(changes.put_runs.size() == 1);
  auto& rec = changes.put_runs[0];
  CHECK(rec.run_id == "r1");
  CHECK(rec.state == "interrupted");
  CHECK(rec.fences);
  auto r = parsed(rec);
  CHECK(r.at("state") == "interrupted");
  CHECK(r.at("session_fenced") == true);
  CHECK(r.at("processes").at("7").at("alive").is_null());
  CHECK_FALSE(changes.mark_runs_imported);
}

TEST_CASE("run recovery: state.json rows are imported once") {
  test::temp_dir root;
  save_state_file(root.path(), row("old1", "completed"));
  save_state_file(root.path(), row("old2", "starting", false, "t"));
  test::write_file(root / "torn", "");
  ::mkdir((root / "torn2").c_str(), 0700);
  test::write_file(root / "torn2/state.json", "{\"run_id\":");
  catalog_snapshot snap;
  metadata_write changes;
  auto found = store::recover_runs(snap, root.path(), "boot", changes);
  REQUIRE(found);
  auto* fenced = &found->fenced;
  CHECK(changes.mark_runs_imported);
  REQUIRE(changes.put_runs.size() == 2);
  // The one that was starting when the old daemon died now fences.
  CHECK((*fenced)[{"a", "t"}] == std::vector<std::string>{"old2"});
  CHECK(fenced->count({"a", "s"}) == 0);
  for (const auto& rec : changes.put_runs)
    CHECK(rec.state == (rec.run_id == "old1" ? "completed" : "interrupted"));
  // Once imported, the files are not read again.
  snap.runs_imported = true;
  metadata_write again;
  REQUIRE(store::recover_runs(snap, root.path(), "boot", again));
  CHECK(again.put_runs.empty());
}

TEST_CASE("run recovery: a run of this boot whose init left a status is "
          "adopted, one of another boot or without a status fences") {
  test::temp_dir root;
  auto live = [&](const std::string& id, const std::string& boot,
                  const char* status) {
    auto r = row(id, "starting");
    r["boot_id"] = boot;
    r["audit_directory"] = root / id;
    ::mkdir((root / id).c_str(), 0700);
    if (status != nullptr)
      test::write_file(root / (id + "/exit"), status);
    return store::record_of(r);
  };
  catalog_snapshot snap;
  snap.runs_imported = true;
  snap.runs.push_back(live("ended", "boot", "7\n"));
  snap.runs.push_back(live("other-boot", "old", "0\n"));
  snap.runs.push_back(live("killed", "boot", nullptr));
  snap.runs.push_back(live("torn", "boot", "garbage"));
  metadata_write changes;
  auto found = store::recover_runs(snap, root.path(), "boot", changes);
  REQUIRE(found);
  REQUIRE(found->adopted.count({"a", "s"}) == 1);
  auto& adopted = found->adopted[{"a", "s"}];
  REQUIRE(adopted.size() == 1);
  CHECK(adopted[0].run_id == "ended");
  // Its `running` row may have been lost; nobody saw its processes since.
  CHECK(adopted[0].state == run_phase::running);
  CHECK(adopted[0].trace_complete == false);
  CHECK(*store::read_exit_status(root / "ended") == 7);
  CHECK(found->fenced[{"a", "s"}] ==
        std::vector<std::string>{"other-boot", "killed", "torn"});
  REQUIRE(changes.put_runs.size() == 4);
  for (const auto& rec : changes.put_runs) {
    CHECK(rec.state == (rec.run_id == "ended" ? "running" : "interrupted"));
    CHECK(rec.fences == (rec.run_id != "ended"));
  }
  // A daemon that knows no boot id adopts nothing.
  metadata_write none;
  auto blind = store::recover_runs(snap, root.path(), "", none);
  REQUIRE(blind);
  CHECK(blind->adopted.empty());
}

TEST_CASE("run recovery: a record keeps the columns the catalog indexes") {
  auto rec = store::record_of(row("r9", "stopped", true, "s2"));
  CHECK(rec.run_id == "r9");
  CHECK(rec.agent_id == "a");
  CHECK(rec.session_id == "s2");
  CHECK(rec.created_ns == 5);
  CHECK(rec.state == "stopped");
  CHECK(rec.fences);
  CHECK(parsed(rec).at("run_id") == "r9");
}
