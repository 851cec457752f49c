// SPDX-License-Identifier: Apache-2.0
// Runs in the catalog and several runs per session, on the real kernel.
#include "guest/store/layout.hpp"
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/temp_dir.hpp"
#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <sqlite3.h>
#include <sys/stat.h>

#include <string>
#include <vector>

using namespace allox;
using namespace allox::test;

namespace {

json::object list(http_client& c, json::object extra = {}) {
  return expect_ok(c.rpc("process.list", with(ids("a", "s"), extra)));
}

/// Saves a run row as stores before the runs table did.
void save_state_file(const std::string& runs_dir, const std::string& id,
                     const std::string& state, int64_t created) {
  auto dir = runs_dir + "/" + id;
  ::mkdir(runs_dir.c_str(), 0700);
  ::mkdir(dir.c_str(), 0700);
  json::object row{{"run_id", id},
                   {"agent_id", "a"},
                   {"session_id", "s"},
                   {"state", state},
                   {"created_ns", created},
                   {"session_fenced", false},
                   {"processes", json::object{}}};
  write_file(dir + "/state.json", json::serialize(row));
}

/// Makes the catalog look as if written before runs moved into it.
void forget_runs_import(const std::string& db_path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(db_path.c_str(), &db) == SQLITE_OK);
  CHECK(sqlite3_exec(db, "DELETE FROM meta WHERE key = 'runs_imported'",
                     nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
}

} // namespace

TEST_CASE("runs: process.list pages through the catalog, oldest first") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  std::vector<std::string> started;
  for (int i = 0; i < 5; ++i) {
    auto id = run_id(start(c, "a", "s", json::array{"true"}));
    wait_done(c, "a", "s", id);
    started.push_back(id);
  }
  // Without paging: the prototype's bare array of every run.
  auto all = c.rpc("process.list", ids("a", "s"));
  REQUIRE(all.status == 200);
  auto& rows = all.json.as_object().at("result").as_array();
  REQUIRE(rows.size() == 5);
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows[i].at("run_id") == json::value(started[i]));
    CHECK_FALSE(rows[i].as_object().contains("processes"));
  }
  // Pages of two, following next_cursor.
  std::vector<std::string> paged;
  json::value cursor = nullptr;
  for (int pages = 0; pages < 5; ++pages) {
    json::object p{{"limit", 2}};
    if (!cursor.is_null())
      p["cursor"] = cursor;
    auto page = list(c, p);
    for (const auto& r : page.at("runs").as_array())
      paged.emplace_back(r.at("run_id").as_string());
    cursor = page.at("next_cursor");
    if (!page.at("has_more").as_bool())
      break;
  }
  CHECK(paged == started);
  expect_error(c.rpc("process.list",
                     with(ids("a", "s"), {{"limit", 2}, {"cursor", "nope"}})),
               400, "invalid_argument");
  expect_error(c.rpc("process.list", with(ids("a", "s"), {{"cursor", "x"}})),
               400, "invalid_argument");
  // Another session's run is not this session's.
  expect_ok(c.rpc("session.create", ids("a", "t")));
  expect_error(
      c.rpc("process.get", with(ids("a", "t"), {{"run_id", started[0]}})), 400,
      "invalid_argument");
  // After a restart the rows come from the catalog.
  d.stop();
  d.start();
  auto row = expect_ok(
      c.rpc("process.get", with(ids("a", "s"), {{"run_id", started[4]}})));
  CHECK(row.at("state") == "completed");
  CHECK(output(c, "a", "s", started[4]).empty());
}

TEST_CASE("runs: rows of older stores are imported once, and live ones fence") {
  daemon_process d{with_execution()};
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  // As a store written before the runs table: never imported. (The store
  // is mounted only while the daemon runs; WAL lets a second writer in.)
  forget_runs_import(store::layout{d.root()}.database());
  d.stop();
  save_state_file(d.runs_dir(), "old-done", "completed", 10);
  save_state_file(d.runs_dir(), "old-live", "running", 20);
  d.start();
  auto& c = d.client();
  auto done = expect_ok(
      c.rpc("process.get", with(ids("a", "s"), {{"run_id", "old-done"}})));
  CHECK(done.at("state") == "completed");
  auto live = expect_ok(
      c.rpc("process.get", with(ids("a", "s"), {{"run_id", "old-live"}})));
  CHECK(live.at("state") == "interrupted");
  CHECK(live.at("session_fenced") == true);
  expect_error(c.rpc("checkpoint.create", ids("a", "s")), 400, "conflict");
  auto unfenced = expect_ok(c.rpc("session.unfence", ids("a", "s")));
  CHECK(unfenced.at("cleared").at("interrupted_runs") ==
        json::array{"old-live"});
  expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  // Imported once: a changed file is not read again, and the release of
  // the fence is kept.
  save_state_file(d.runs_dir(), "old-done", "failed", 10);
  d.stop();
  d.start();
  auto again = expect_ok(
      c.rpc("process.get", with(ids("a", "s"), {{"run_id", "old-done"}})));
  CHECK(again.at("state") == "completed");
  auto released = expect_ok(
      c.rpc("process.get", with(ids("a", "s"), {{"run_id", "old-live"}})));
  CHECK(released.at("session_fenced") == false);
  expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  auto rows = c.rpc("process.list", ids("a", "s"));
  CHECK(rows.json.as_object().at("result").as_array().size() == 2);
}

TEST_CASE("runs: a session holds up to max_runs runs, each in its own group") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  // Default: one run, and the prototype's error for a second.
  auto first = run_id(start(c, "a", "s", json::array{"sleep", "30"}));
  auto busy = c.rpc("process.start",
                    with(ids("a", "s"), {{"argv", json::array{"true"}}}));
  expect_error(busy, 400, "conflict");
  CHECK(busy.json.at("error") ==
        "session already has an active execution: a/s");
  // max_runs cannot change under a live run.
  expect_error(
      c.rpc("session.configure", with(ids("a", "s"), {{"max_runs", 3}})), 400,
      "conflict");
  expect_ok(c.rpc("process.stop", with(ids("a", "s"), {{"run_id", first}})));
  expect_error(
      c.rpc("session.configure", with(ids("a", "s"), {{"max_runs", 0}})), 400,
      "invalid_argument");
  auto cfg = expect_ok(
      c.rpc("session.configure", with(ids("a", "s"), {{"max_runs", 3}})));
  CHECK(cfg.at("max_runs") == 3);
  std::vector<std::string> runs;
  std::vector<std::string> groups;
  for (int i = 0; i < 3; ++i) {
    auto row = start(c, "a", "s", json::array{"sleep", "30"});
    runs.push_back(run_id(row));
    groups.emplace_back(row.at("cgroup").as_string());
    CHECK(row.at("state") == "running");
  }
  for (size_t i = 0; i < 3; ++i)
    CHECK(groups[i].find("/sessions/s/runs/" + runs[i]) != std::string::npos);
  expect_error(c.rpc("process.start",
                     with(ids("a", "s"), {{"argv", json::array{"true"}}})),
               400, "conflict");
  // Stopping one run leaves the others running.
  auto stopped = expect_ok(
      c.rpc("process.stop", with(ids("a", "s"), {{"run_id", runs[0]}})));
  CHECK(stopped.at("state") == "stopped");
  for (int i = 1; i < 3; ++i) {
    auto row = expect_ok(
        c.rpc("process.get", with(ids("a", "s"), {{"run_id", runs[i]}})));
    CHECK(row.at("state") == "running");
  }
  // A freed slot takes a new run; its output is its own.
  auto echo = run_id(sh(c, "a", "s", "echo mine"));
  wait_done(c, "a", "s", echo);
  CHECK(output(c, "a", "s", echo) == "mine\n");
  // A checkpoint freezes both runs for its snapshot; a rollback without
  // kill_processes refuses while they live.
  auto cp = expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  expect_error(
      c.rpc("session.rollback",
            with(ids("a", "s"), {{"checkpoint_id", cp.at("checkpoint_id")}})),
      400, "conflict");
  d.stop();
  d.start();
  // The stop ended both runs cleanly; the session is usable again.
  for (int i = 1; i < 3; ++i) {
    auto row = expect_ok(
        c.rpc("process.get", with(ids("a", "s"), {{"run_id", runs[i]}})));
    CHECK(row.at("stop_reason") == "daemon_shutdown");
    CHECK(row.at("session_fenced") == false);
  }
  auto base = expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  runs.clear();
  for (int i = 0; i < 2; ++i)
    runs.push_back(run_id(start(c, "a", "s", json::array{"sleep", "30"})));
  auto rolled = expect_ok(
      c.rpc("session.rollback",
            with(ids("a", "s"), {{"checkpoint_id", base.at("checkpoint_id")},
                                 {"kill_processes", true}})));
  auto killed = rolled.at("terminated_process_runs").as_array();
  CHECK(killed.size() == 2);
  for (const auto& id : runs) {
    auto row =
        expect_ok(c.rpc("process.get", with(ids("a", "s"), {{"run_id", id}})));
    CHECK(row.at("stop_reason") == "rollback");
  }
  // No group is left behind once the runs ended.
  auto session_group = d.cgroup_root() + "/agents/a/sessions/s";
  CHECK(eventually([&] {
    struct stat sb {};
    return ::stat((session_group + "/runs").c_str(), &sb) != 0;
  }));
}

TEST_CASE("runs: stdin through a pipe, and a terminal with its size") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto input = [&](const std::string& id, json::object p) {
    return c.rpc("process.input",
                 with(ids("a", "s"), with({{"run_id", id}}, p)));
  };
  // A pipe: cat echoes what it is fed, and ends at the end of input.
  auto cat = run_id(start(c, "a", "s", json::array{"cat"}, {{"stdin", true}}));
  auto fed = expect_ok(input(cat, {{"data", "hello\n"}}));
  CHECK(fed.at("written") == 6);
  auto closed = expect_ok(input(cat, {{"data", "bye\n"}, {"eof", true}}));
  CHECK(closed.at("eof") == true);
  auto row = wait_done(c, "a", "s", cat);
  CHECK(row.at("state") == "completed");
  CHECK(row.at("root_exit_code") == 0);
  CHECK(output(c, "a", "s", cat) == "hello\nbye\n");
  expect_error(input(cat, {{"data", "late"}}), 400, "conflict");
  // A terminal: the run sees its size, a resize, and what is typed.
  auto tty = run_id(sh(c, "a", "s",
                       "stty size; read a; stty size; read b; echo got:$b",
                       {{"pty", json::object{{"rows", 40}, {"cols", 100}}}}));
  CHECK(eventually([&] {
    return output(c, "a", "s", tty).find("40 100") != std::string::npos;
  }));
  expect_ok(c.rpc(
      "process.resize",
      with(ids("a", "s"), {{"run_id", tty}, {"rows", 50}, {"cols", 120}})));
  expect_ok(input(tty, {{"data", "\n"}}));
  expect_ok(input(tty, {{"data", "typed\n"}}));
  row = wait_done(c, "a", "s", tty);
  CHECK(row.at("state") == "completed");
  CHECK(row.at("stdin") == "pty");
  auto out = output(c, "a", "s", tty);
  CHECK(out.find("50 120") != std::string::npos);
  CHECK(out.find("got:typed") != std::string::npos);
  // Runs without input refuse it, and only terminals resize.
  auto plain = run_id(start(c, "a", "s", json::array{"sleep", "30"}));
  expect_error(input(plain, {{"data", "x"}}), 400, "invalid_argument");
  expect_error(
      c.rpc("process.resize",
            with(ids("a", "s"), {{"run_id", plain}, {"rows", 5}, {"cols", 5}})),
      400, "invalid_argument");
  expect_ok(c.rpc("process.stop", with(ids("a", "s"), {{"run_id", plain}})));
  expect_error(c.rpc("process.start",
                     with(ids("a", "s"), {{"argv", json::array{"true"}},
                                          {"pty", json::object{{"rows", 0}}}})),
               400, "invalid_argument");
}
