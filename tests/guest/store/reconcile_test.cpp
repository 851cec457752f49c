// SPDX-License-Identifier: Apache-2.0
// Reconciliation logic on plain directories (it never needs a subvolume to
// decide; the Btrfs paths are covered by the integration tests).
#include "guest/store/reconcile.hpp"

#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <map>

using namespace allox;
using namespace std::string_literals;

namespace {

void mkdirs(const std::string& path) {
  std::string cur;
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = path.find('/', pos + 1);
    ::mkdir(path.substr(0, pos).c_str(), 0755);
  }
}

void make_session(const store::layout& l, const std::string& a,
                  const std::string& s) {
  mkdirs(l.current(a, s));
  mkdirs(l.agent_shared(a));
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

} // namespace

TEST_CASE("reconcile: adopts workspaces without rows, forgets rows without "
          "workspaces") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s1");
  make_session(l, "a", "s2");
  catalog_snapshot rows;
  rows.agents.push_back({"a", 5, false});
  rows.agents.push_back({"gone", 5, false});
  rows.sessions.push_back({"a", "s1", 6, false, {}, {}});
  rows.sessions.push_back({"a", "lost", 6, false, {}, {}});
  auto r = store::reconcile(l, rows);
  REQUIRE(r);
  CHECK(r->summary.adopted_sessions == std::vector<std::string>{"a/s2"});
  CHECK(r->summary.forgotten == std::vector<std::string>{"gone", "a/lost"});
  CHECK(r->sessions.size() == 2);
  CHECK(r->agents.size() == 1);
  CHECK(exists(l.current("a", "s2") + "/.allox-tmp"));
  bool audited = false;
  for (const auto& e : r->changes.audit)
    audited |= e.op == "session.adopt" && e.session_id == "s2";
  CHECK(audited);
}

TEST_CASE("reconcile: finishes interrupted deletions and purges trash") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "doomed");
  make_session(l, "a", "kept");
  make_session(l, "b", "s");
  mkdirs(l.sessions_dir("a") + "/.trash-0123");
  mkdirs(l.agents_dir() + "/.trash-4567/x");
  catalog_snapshot rows;
  rows.agents.push_back({"a", 1, false});
  rows.agents.push_back({"b", 1, true});
  rows.sessions.push_back({"a", "doomed", 1, true, {}, {}});
  rows.sessions.push_back({"a", "kept", 1, false, {}, {}});
  rows.sessions.push_back({"b", "s", 1, false, {}, {}});
  auto r = store::reconcile(l, rows);
  REQUIRE(r);
  CHECK_FALSE(exists(l.session_dir("a", "doomed")));
  CHECK_FALSE(exists(l.agent_dir("b")));
  CHECK_FALSE(exists(l.sessions_dir("a") + "/.trash-0123"));
  CHECK_FALSE(exists(l.agents_dir() + "/.trash-4567"));
  CHECK(exists(l.current("a", "kept")));
  REQUIRE(r->sessions.size() == 1);
  CHECK(r->sessions[0].session_id == "kept");
  CHECK(r->summary.finished_deletions ==
        std::vector<std::string>{"b", "a/doomed"});
}

TEST_CASE("reconcile: ignores names that are not ids and symlinks") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  mkdirs(l.sessions_dir("a") + "/bad name/current");
  ::symlink("/etc", (l.sessions_dir("a") + "/link").c_str());
  auto r = store::reconcile(l, {});
  REQUIRE(r);
  CHECK(r->summary.adopted_sessions == std::vector<std::string>{"a/s"});
}

// -- rollback and checkpoint recovery (prototype 5.5 cases and ours) ----------

namespace {

journal_row rollback_journal(const std::string& phase) {
  return {"a",          "s",          "rollback", phase,  "target",
          ".restore-t", ".discard-t", true,       "test", ""};
}

catalog_snapshot one_session(std::vector<journal_row> journals = {}) {
  catalog_snapshot rows;
  rows.agents.push_back({"a", 1, false});
  rows.sessions.push_back({"a", "s", 1, false, "old", {}});
  checkpoint_row old;
  old.agent_id = "a";
  old.session_id = "s";
  old.checkpoint_id = "old";
  old.origin = "test";
  auto target = old;
  target.checkpoint_id = "target";
  target.parent_id = "old";
  rows.checkpoints = {old, target};
  rows.journals = std::move(journals);
  return rows;
}

void make_checkpoints(const store::layout& l) {
  mkdirs(l.checkpoint("a", "s", "old"));
  mkdirs(l.checkpoint("a", "s", "target"));
}

std::string session_file(const store::layout& l, const std::string& name) {
  return l.session_dir("a", "s") + "/" + name;
}

const session_row& only_session(const store::reconcile_result& r) {
  REQUIRE(r.sessions.size() == 1);
  return r.sessions.front();
}

checkpoint_row intent(const std::string& id, const std::string& parent) {
  checkpoint_row row;
  row.agent_id = "a";
  row.session_id = "s";
  row.checkpoint_id = id;
  row.created_at_ns = 1000;
  row.origin = "crash-test";
  row.parent_id = parent;
  return row;
}

bool audited(const store::reconcile_result& r, const std::string& op,
             const std::string& outcome) {
  for (const auto& e : r.changes.audit)
    if (e.op == op && e.fields.find(outcome) != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST_CASE("recovery: old_moved with current renamed away finishes to the "
          "target") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  make_checkpoints(l);
  test::write_file(l.current("a", "s") + "/who", "old");
  REQUIRE(::rename(l.current("a", "s").c_str(),
                   session_file(l, ".discard-t").c_str()) == 0);
  mkdirs(session_file(l, ".restore-t") + "/.allox-tmp");
  test::write_file(session_file(l, ".restore-t") + "/who", "target");
  ::mkfifo((session_file(l, ".restore-t") + "/.allox-tmp/fifo").c_str(), 0600);
  auto r = store::reconcile(l, one_session({rollback_journal("old_moved")}));
  REQUIRE(r);
  CHECK(test::read_file(l.current("a", "s") + "/who") == "target");
  CHECK_FALSE(exists(session_file(l, ".restore-t")));
  CHECK_FALSE(exists(session_file(l, ".discard-t")));
  // Scrubbed on a recovered commit, unlike the prototype.
  CHECK_FALSE(exists(l.current("a", "s") + "/.allox-tmp/fifo"));
  CHECK(only_session(*r).head == "target"s);
  CHECK(r->changes.delete_journals.size() == 1);
  CHECK(audited(*r, "session.rollback.recovered", "committed"));
  CHECK(r->summary.recovered_sessions.size() == 1);
}

TEST_CASE("recovery: prepared with current intact is aborted") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  make_checkpoints(l);
  test::write_file(l.current("a", "s") + "/who", "old");
  mkdirs(session_file(l, ".restore-t"));
  auto r = store::reconcile(l, one_session({rollback_journal("prepared")}));
  REQUIRE(r);
  CHECK(test::read_file(l.current("a", "s") + "/who") == "old");
  CHECK_FALSE(exists(session_file(l, ".restore-t")));
  CHECK(only_session(*r).head == "old"s);
  CHECK(audited(*r, "session.rollback.recovered", "aborted"));
}

TEST_CASE("recovery: a swapped-in current with the old one still there is "
          "committed") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  make_checkpoints(l);
  test::write_file(l.current("a", "s") + "/who", "target");
  mkdirs(session_file(l, ".discard-t"));
  for (auto phase : {"prepared", "old_moved", "committed"}) {
    CAPTURE(phase);
    mkdirs(session_file(l, ".discard-t"));
    auto r = store::reconcile(l, one_session({rollback_journal(phase)}));
    REQUIRE(r);
    CHECK(only_session(*r).head == "target"s);
    CHECK_FALSE(exists(session_file(l, ".discard-t")));
  }
}

TEST_CASE("recovery: current missing before the journal reached prepared "
          "takes the old workspace back") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  make_checkpoints(l);
  REQUIRE(::rename(l.current("a", "s").c_str(),
                   session_file(l, ".discard-t").c_str()) == 0);
  mkdirs(session_file(l, ".restore-t"));
  auto r = store::reconcile(l, one_session({rollback_journal("preparing")}));
  REQUIRE(r);
  CHECK(exists(l.current("a", "s")));
  CHECK(only_session(*r).head == "old"s);
}

TEST_CASE("recovery: orphans without a journal") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  make_checkpoints(l);
  REQUIRE(::rename(l.current("a", "s").c_str(),
                   session_file(l, ".discard-x").c_str()) == 0);
  mkdirs(session_file(l, ".restore-x"));
  auto r = store::reconcile(l, one_session());
  REQUIRE(r);
  CHECK(exists(l.current("a", "s")));
  CHECK_FALSE(exists(session_file(l, ".restore-x")));
  CHECK(audited(*r, "session.rollback.recovered", "aborted-orphan"));
}

TEST_CASE("recovery: an intent record without its snapshot is dropped, "
          "never adopted") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  make_checkpoints(l);
  REQUIRE_FALSE(store::write_create_intent(l, intent("half", "target")));
  auto r = store::reconcile(l, one_session());
  REQUIRE(r);
  for (const auto& c : r->checkpoints)
    CHECK(c.checkpoint_id != "half");
  CHECK(only_session(*r).head == "old"s);
  CHECK(store::create_intents(l, "a", "s").empty());
  CHECK(r->settled_intents.empty());
  CHECK(audited(*r, "checkpoint.create.recovered", "aborted"));
}

TEST_CASE("recovery: an interrupted checkpoint deletion is finished") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  make_checkpoints(l);
  journal_row j{
      "a",    "s", "checkpoint.delete", "preparing", "old", "", "", false,
      "test", ""};
  auto r = store::reconcile(l, one_session({j}));
  REQUIRE(r);
  CHECK_FALSE(exists(l.checkpoint("a", "s", "old")));
  REQUIRE(r->checkpoints.size() == 1);
  CHECK(r->checkpoints[0].checkpoint_id == "target");
  CHECK_FALSE(r->checkpoints[0].parent_id); // re-parented
  CHECK_FALSE(only_session(*r).head);       // the deleted head had no parent
}

TEST_CASE("recovery: rows without snapshots are missing - snapshots without "
          "rows are adopted") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  mkdirs(l.checkpoint("a", "s", "target"));
  mkdirs(l.checkpoint("a", "s", "stranger"));
  auto r = store::reconcile(l, one_session());
  REQUIRE(r);
  std::map<std::string, checkpoint_row> byid;
  for (const auto& c : r->checkpoints)
    byid[c.checkpoint_id] = c;
  CHECK(byid.at("old").missing);
  CHECK_FALSE(byid.at("target").missing);
  CHECK(byid.at("stranger").origin == "filesystem-recovery");
  CHECK_FALSE(byid.at("stranger").parent_id);
  CHECK_FALSE(only_session(*r).head); // head "old" has no snapshot
}

TEST_CASE("recovery: an intent record with its snapshot becomes the row and "
          "the head") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  make_checkpoints(l);
  auto first = intent("first", "target");
  first.message = "msg";
  first.metadata = R"({"k":"v"})";
  first.pinned = true;
  auto second = intent("second", "first");
  second.created_at_ns = first.created_at_ns + 1;
  REQUIRE_FALSE(store::write_create_intent(l, second));
  REQUIRE_FALSE(store::write_create_intent(l, first));
  mkdirs(l.checkpoint("a", "s", "first"));
  mkdirs(l.checkpoint("a", "s", "second"));
  auto rows = one_session();
  rows.sessions[0].head = "target";
  auto r = store::reconcile(l, rows);
  REQUIRE(r);
  std::map<std::string, checkpoint_row> byid;
  for (const auto& c : r->checkpoints)
    byid[c.checkpoint_id] = c;
  REQUIRE(byid.count("first") == 1);
  REQUIRE(byid.count("second") == 1);
  CHECK(byid.at("first").parent_id == "target"s);
  CHECK(byid.at("first").message == "msg"s);
  CHECK(byid.at("first").metadata == R"({"k":"v"})"s);
  CHECK(byid.at("first").pinned);
  CHECK(byid.at("first").origin == "crash-test");
  CHECK(byid.at("second").parent_id == "first"s);
  CHECK_FALSE(byid.at("second").message);
  CHECK(only_session(*r).head == "second"s); // in creation order
  CHECK(audited(*r, "checkpoint.create.recovered", "committed"));
  int creates = 0;
  for (const auto& e : r->changes.audit)
    creates += e.op == "checkpoint.create";
  CHECK(creates == 2);
  // Removed only after the start-up commit.
  CHECK(store::create_intents(l, "a", "s").size() == 2);
  CHECK(r->settled_intents.size() == 2);
}

TEST_CASE("recovery: an intent record whose row exists is only stale") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  make_checkpoints(l);
  REQUIRE_FALSE(store::write_create_intent(l, intent("target", "old")));
  auto r = store::reconcile(l, one_session());
  REQUIRE(r);
  CHECK(r->settled_intents.size() == 1);
  CHECK(r->changes.audit.empty());
  CHECK(only_session(*r).head == "old"s);
}

TEST_CASE("recovery: a record whose parent is no longer the head becomes a "
          "branch, not the head") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_session(l, "a", "s");
  make_checkpoints(l);
  // Taken from "old", but the session went on to "target" afterwards (its
  // caller was told the creation failed after the snapshot).
  REQUIRE_FALSE(store::write_create_intent(l, intent("orphan", "old")));
  mkdirs(l.checkpoint("a", "s", "orphan"));
  auto rows = one_session();
  rows.sessions[0].head = "target";
  auto r = store::reconcile(l, rows);
  REQUIRE(r);
  CHECK(only_session(*r).head == "target"s);
  bool found = false;
  for (const auto& c : r->checkpoints)
    if (c.checkpoint_id == "orphan") {
      found = true;
      CHECK(c.parent_id == "old"s);
    }
  CHECK(found);
}

// A fork's session directory as a crash may leave it (actors/agent_fork.cpp):
// the baseline's record always; optionally the baseline snapshot and the
// new current/ under its staging name.
namespace {

void half_made_fork(const store::layout& l, bool baseline, bool staged) {
  mkdirs(l.checkpoints_dir("a", "f"));
  auto row = intent("base", "");
  row.session_id = "f";
  row.parent_id = caf::none;
  row.metadata = R"({"forked_from":{"session_id":"s","checkpoint_id":"c"}})";
  REQUIRE_FALSE(store::write_create_intent(l, row));
  if (baseline)
    mkdirs(l.checkpoint("a", "f", "base"));
  if (staged)
    mkdirs(l.session_dir("a", "f") + "/" +
           std::string{store::fork_current_name} + "/data");
}

catalog_snapshot agent_only() {
  catalog_snapshot rows;
  rows.agents.push_back({"a", 1, false});
  return rows;
}

} // namespace

TEST_CASE("recovery: a fork with both snapshots is finished and adopted with "
          "its baseline") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  mkdirs(l.agent_shared("a"));
  half_made_fork(l, true, true);
  auto r = store::reconcile(l, agent_only());
  REQUIRE(r);
  CHECK(exists(l.current("a", "f") + "/data"));
  CHECK_FALSE(exists(l.session_dir("a", "f") + "/" +
                     std::string{store::fork_current_name}));
  CHECK(r->summary.recovered_forks == std::vector<std::string>{"a/f"});
  REQUIRE(r->sessions.size() == 1);
  CHECK(r->sessions[0].head == "base"s);
  REQUIRE(r->checkpoints.size() == 1);
  CHECK(r->checkpoints[0].metadata->find("forked_from") != std::string::npos);
}

TEST_CASE("recovery: a fork without both snapshots is removed") {
  for (auto [baseline, staged] :
       {std::pair{false, false}, std::pair{true, false},
        std::pair{false, true}}) {
    CAPTURE(baseline);
    CAPTURE(staged);
    test::temp_dir dir;
    store::layout l{dir.path()};
    mkdirs(l.agent_shared("a"));
    half_made_fork(l, baseline, staged);
    auto r = store::reconcile(l, agent_only());
    REQUIRE(r);
    CHECK_FALSE(exists(l.session_dir("a", "f")));
    CHECK(r->summary.aborted_forks == std::vector<std::string>{"a/f"});
    CHECK(r->sessions.empty());
    CHECK(audited(*r, "session.fork.aborted", "recovery"));
  }
}

TEST_CASE("recovery: a fork whose rename was lost is finished even when the "
          "catalog already holds its row") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  mkdirs(l.agent_shared("a"));
  half_made_fork(l, true, true);
  auto rows = agent_only();
  rows.sessions.push_back({"a", "f", 1, false, "base", {}});
  auto r = store::reconcile(l, rows);
  REQUIRE(r);
  CHECK(exists(l.current("a", "f") + "/data"));
  REQUIRE(r->sessions.size() == 1);
  CHECK(r->summary.forgotten.empty());
  // Without its baseline it is not finished, and with a row never removed.
  test::temp_dir dir2;
  store::layout l2{dir2.path()};
  mkdirs(l2.agent_shared("a"));
  half_made_fork(l2, false, true);
  REQUIRE(store::reconcile(l2, rows));
  CHECK(exists(l2.session_dir("a", "f") + "/" +
               std::string{store::fork_current_name}));
}

TEST_CASE("recovery: a fork with current/, its mark and its baseline loses "
          "the mark and is adopted as usual") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  mkdirs(l.agent_shared("a"));
  half_made_fork(l, true, false);
  mkdirs(l.current("a", "f") + "/data");
  auto mark =
      l.session_dir("a", "f") + "/" + std::string{store::fork_pending_name};
  test::write_file(mark, "");
  auto r = store::reconcile(l, agent_only());
  REQUIRE(r);
  CHECK_FALSE(exists(mark));
  CHECK(r->summary.recovered_forks.empty());
  REQUIRE(r->sessions.size() == 1);
  CHECK(r->sessions[0].head == "base"s);
}

// Metadata naming forked_from is anyone's to write (checkpoint.create):
// without the fork's mark a session's unfinished creation is dropped as
// any other, never completed from the checkpoint it names.
TEST_CASE("recovery: without the fork's mark, an intent naming forked_from "
          "is an unfinished checkpoint.create") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  mkdirs(l.agent_shared("a"));
  half_made_fork(l, false, false);
  mkdirs(l.current("a", "f") + "/data");
  auto r = store::reconcile(l, agent_only());
  REQUIRE(r);
  CHECK(r->summary.recovered_forks.empty());
  CHECK(r->summary.aborted_forks.empty());
  CHECK_FALSE(exists(l.checkpoint("a", "f", "base")));
  REQUIRE(r->sessions.size() == 1);
  CHECK(r->checkpoints.empty());
}

TEST_CASE("recovery: a session directory without current/ that is not shaped "
          "as a fork's leftover is left alone") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  mkdirs(l.agent_shared("a"));
  // A session.create that stopped early.
  mkdirs(l.checkpoints_dir("a", "half"));
  // A session whose current/ is gone but whose checkpoints are real: a
  // stale record beside another checkpoint.
  half_made_fork(l, true, false);
  mkdirs(l.checkpoint("a", "f", "older"));
  // A record that is not a fork's.
  mkdirs(l.checkpoints_dir("a", "c"));
  auto plain = intent("cp", "");
  plain.session_id = "c";
  REQUIRE_FALSE(store::write_create_intent(l, plain));
  auto r = store::reconcile(l, agent_only());
  REQUIRE(r);
  CHECK(exists(l.checkpoints_dir("a", "half")));
  CHECK(exists(l.checkpoint("a", "f", "older")));
  CHECK(exists(l.checkpoints_dir("a", "c")));
  CHECK(r->sessions.empty());
  CHECK(r->summary.aborted_forks.empty());
}
