// SPDX-License-Identifier: Apache-2.0
// Undoable rollbacks (policy keep_pre_rollback): the tree a rollback
// replaces is kept as a checkpoint on a branch, a second rollback to it
// undoes the first, it counts against keep_auto, and a crash while it is
// being kept leaves it complete or absent, never the head.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/json_text.hpp"
#include "tests/fixtures/session_files.hpp"
#include "tests/fixtures/temp_dir.hpp"
#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <string>

using namespace allox;
using namespace allox::test;

namespace {

/// A session "s" of agent "a" with c1 ("1") as the head and "2" in
/// current/, under `policy`.
void prepare(daemon_process& d, const json::object& policy) {
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(c.rpc("policy.set", with(ids("a", "s"), policy)));
  write_file(d.current("a", "s") + "/f", "1");
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
  write_file(d.current("a", "s") + "/f", "2");
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "s"), {{"checkpoint_id", "c2"}})));
  write_file(d.current("a", "s") + "/f", "2-unsaved");
}

json::object describe(http_client& c, const std::string& id) {
  return expect_ok(c.rpc("checkpoint.describe",
                         with(ids("a", "s"), {{"checkpoint_id", id}})));
}

std::string head(http_client& c) {
  return str(expect_ok(c.rpc("checkpoint.list", ids("a", "s"))).at("head"));
}

} // namespace

TEST_CASE("undo rollback: the replaced tree is a checkpoint, and rolling "
          "back to it undoes the rollback") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  prepare(d, {{"keep_pre_rollback", true}});
  auto r = expect_ok(c.rpc("session.rollback",
                           with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
  CHECK(read_file(d.current("a", "s") + "/f") == "1");
  auto kept = str(r.at("pre_rollback_checkpoint_id"));
  CHECK(head(c) == "c1"); // the head is the target, the kept tree a branch
  auto rec = describe(c, kept);
  CHECK(rec.at("origin") == "pre-rollback");
  CHECK(rec.at("parent_id") == "c2");
  CHECK(rec.at("message") == "before rollback to c1");
  const auto& meta = rec.at("metadata").as_object();
  CHECK(meta.at("rollback_to") == "c1");
  CHECK(meta.at("replaced_head") == "c2");
  CHECK(meta.at("auto") == true);
  // The unsaved change survived in the kept tree: undo brings it back.
  auto undo = expect_ok(c.rpc("session.rollback",
                              with(ids("a", "s"), {{"checkpoint_id", kept}})));
  CHECK(read_file(d.current("a", "s") + "/f") == "2-unsaved");
  CHECK(head(c) == kept);
  // The undo kept the tree it replaced in turn.
  CHECK(undo.at("pre_rollback_checkpoint_id").is_string());
  // Audited as a checkpoint creation.
  auto ops = audit_ops(c, {{"agent_id", "a"}, {"op", "checkpoint.create"}});
  CHECK(ops.size() == 4);
}

TEST_CASE("undo rollback: on with the turn policy, off when set so") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  prepare(d, {{"auto_checkpoint_turns", true}});
  auto policy = expect_ok(c.rpc("policy.get", ids("a", "s")));
  CHECK(policy.at("policy").at("keep_pre_rollback") == true);
  auto r = expect_ok(c.rpc("session.rollback",
                           with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
  CHECK(r.at("pre_rollback_checkpoint_id").is_string());
  expect_ok(
      c.rpc("policy.set", with(ids("a", "s"), {{"keep_pre_rollback", false}})));
  r = expect_ok(c.rpc("session.rollback",
                      with(ids("a", "s"), {{"checkpoint_id", "c2"}})));
  CHECK_FALSE(r.contains("pre_rollback_checkpoint_id"));
  // Without any policy a rollback keeps nothing, as the reference.
  expect_ok(c.rpc("session.create", ids("a", "plain")));
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "plain"), {{"checkpoint_id", "p"}})));
  r = expect_ok(c.rpc("session.rollback",
                      with(ids("a", "plain"), {{"checkpoint_id", "p"}})));
  CHECK_FALSE(r.contains("pre_rollback_checkpoint_id"));
}

TEST_CASE("undo rollback: kept trees count against keep_auto, manual "
          "checkpoints stay") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  prepare(d, {{"keep_pre_rollback", true}, {"keep_auto", 1}});
  std::string first, second;
  first = str(expect_ok(c.rpc("session.rollback",
                              with(ids("a", "s"), {{"checkpoint_id", "c1"}})))
                  .at("pre_rollback_checkpoint_id"));
  second = str(expect_ok(c.rpc("session.rollback",
                               with(ids("a", "s"), {{"checkpoint_id", "c2"}})))
                   .at("pre_rollback_checkpoint_id"));
  // Pruning follows the reply.
  REQUIRE(eventually([&] {
    auto l = expect_ok(c.rpc("checkpoint.list", ids("a", "s")));
    return l.at("checkpoint_ids").as_array().size() == 3;
  }));
  auto l = expect_ok(c.rpc("checkpoint.list", ids("a", "s")));
  auto idv = l.at("checkpoint_ids").as_array();
  auto has = [&](const std::string& id) {
    for (auto& v : idv)
      if (v == json::value(id))
        return true;
    return false;
  };
  CHECK(has("c1"));
  CHECK(has("c2"));
  CHECK(has(second));
  CHECK_FALSE(has(first));
}

TEST_CASE("undo rollback: a crash while keeping the replaced tree leaves "
          "the rollback committed and the kept tree complete or absent") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  if (!fault_injection_built(c))
    return; // release build
  prepare(d, {{"keep_pre_rollback", true}});
  struct round {
    const char* point;
    bool kept;
    bool to_head; // the replaced tree's parent is the target itself
  };
  for (auto [point, kept, to_head] :
       {round{"rollback.keep.before_snapshot", false, false},
        round{"rollback.keep.after_snapshot", true, false},
        round{"rollback.keep.after_snapshot", true, true}}) {
    std::string point_name{point};
    CAPTURE(point_name);
    CAPTURE(to_head);
    auto before = head(c);
    std::string target = to_head ? before : before == "c1" ? "c2" : "c1";
    write_file(d.current("a", "s") + "/f", "unsaved");
    expect_ok(c.rpc("debug.fault", fault("a", "s", point, "crash")));
    c.try_rpc("session.rollback",
              with(ids("a", "s"), {{"checkpoint_id", target}}));
    CHECK(d.wait_exit(std::chrono::seconds{10}) == 128 + SIGKILL);
    d.start();
    // Committed before the keep step; the kept tree never becomes the
    // head, also when it grew from the target.
    CHECK(head(c) == target);
    CHECK(read_file(d.current("a", "s") + "/f") ==
          (target == "c1" ? "1" : "2"));
    int pre = 0;
    auto l = expect_ok(c.rpc("checkpoint.list", ids("a", "s")));
    for (auto& rec : l.at("checkpoints").as_array())
      if (rec.as_object().at("origin") == "pre-rollback") {
        ++pre;
        CHECK(rec.as_object().at("parent_id") == json::value(before));
      }
    CHECK(pre == (kept ? 1 : 0));
    CHECK(session_entries(d, "a", "s", ".discard-").empty());
    CHECK(session_entries(d, "a", "s", ".restore-").empty());
    // Clean up the kept one so the next round counts from zero.
    for (auto& rec : l.at("checkpoints").as_array())
      if (rec.as_object().at("origin") == "pre-rollback")
        expect_ok(c.rpc(
            "checkpoint.delete",
            with(ids("a", "s"),
                 {{"checkpoint_id", rec.as_object().at("checkpoint_id")}})));
  }
}
