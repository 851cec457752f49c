// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of the checkpoint results that the golden
// transcripts reach only in part: a diff page's shape and counts, and the
// rollback's optional keys.
#include "messages/results/checkpoints_json.hpp"

#include <doctest/doctest.h>

using namespace allox;

namespace {

/// The keys of `o`, in order.
std::vector<std::string> keys(const json::object& o) {
  std::vector<std::string> out;
  for (const auto& kv : o)
    out.emplace_back(kv.key());
  return out;
}

} // namespace

TEST_CASE("checkpoint results: a diff page in the wire's key order, with "
          "counts of the whole diff") {
  diff_page p;
  p.agent_id = "a";
  p.session_id = "s";
  p.from = "c1";
  p.changes = {{"x", path_change_kind::added, "file", {}, {}},
               {"y/z", path_change_kind::deleted, "directory", {}, {}}};
  count(p.counts, path_change_kind::added);
  count(p.counts, path_change_kind::deleted);
  count(p.counts, path_change_kind::modified);
  p.next_cursor = "y/z";
  p.has_more = true;
  p.cost = {"generation", 3, 4, 5};
  auto o = to_json(p);
  CHECK(keys(o) == std::vector<std::string>{"agent_id", "session_id", "from",
                                            "to", "base_checkpoint", "changes",
                                            "counts", "next_cursor", "has_more",
                                            "method", "stats"});
  CHECK(o.at("to").is_null());
  CHECK(o.at("base_checkpoint").is_null());
  CHECK(o.at("changes").as_array()[1] == json::object{{"path", "y/z"},
                                                      {"change", "deleted"},
                                                      {"type", "directory"}});
  CHECK(o.at("counts") ==
        json::object{{"added", 1}, {"modified", 1}, {"deleted", 1}});
  CHECK(o.at("stats") == json::object{{"changed_inodes", 3},
                                      {"compared_paths", 4},
                                      {"listed_dirs", 5}});
}

TEST_CASE("checkpoint results: a diff asked for writers names them, or says "
          "why nobody is named") {
  diff_page p;
  p.with_writers = true;
  change_writer w;
  w.run_id = "r1";
  w.process_id = "boot:5:42";
  w.pid = 42;
  w.run_argv = std::vector<std::string>{"sh", "-c", "echo > x"};
  w.ops = {"write", "create"};
  change_writer rpc;
  rpc.action = "file.write";
  rpc.origin = "mcp";
  rpc.ops = {"write"};
  p.changes = {{"x", path_change_kind::added, "file", {w, rpc}, {}},
               {"y", path_change_kind::modified, "file", {}, {"untracked"}}};
  auto changes = to_json(p).at("changes").as_array();
  CHECK(changes[0].at("writers") ==
        json::array{
            json::object{{"kind", "run"},
                         {"run_id", "r1"},
                         {"process_id", "boot:5:42"},
                         {"pid", 42},
                         {"run_argv", json::array{"sh", "-c", "echo > x"}},
                         {"exe", nullptr},
                         {"ops", json::array{"write", "create"}}},
            // The daemon's own change: the request and its front.
            json::object{{"kind", "daemon"},
                         {"action", "file.write"},
                         {"origin", "mcp"},
                         {"ops", json::array{"write"}}}});
  CHECK(changes[0].at("unattributed").is_null());
  CHECK(changes[1].at("writers") == json::array{});
  CHECK(changes[1].at("unattributed") == "untracked");
  // Without writers the keys are not there (the native wire as before).
  p.with_writers = false;
  CHECK_FALSE(
      to_json(p).at("changes").as_array()[0].as_object().contains("writers"));
}

TEST_CASE("checkpoint results: a rollback names killed runs and the kept "
          "tree only when they were asked for") {
  rollback_result r;
  r.agent_id = "a";
  r.session_id = "s";
  r.checkpoint_id = "c1";
  r.relative_workspace = "agents/a/workspace/sessions/s/current";
  auto plain = to_json(r);
  CHECK(keys(plain) == std::vector<std::string>{
                           "agent_id", "session_id", "checkpoint_id",
                           "relative_workspace", "removed_runtime_entries"});
  r.terminated_process_runs = std::vector<std::string>{};
  r.keep_asked = true;
  r.pre_rollback_error = "no space";
  auto full = to_json(r);
  CHECK(full.at("terminated_process_runs") == json::array{});
  CHECK(full.at("pre_rollback_checkpoint_id").is_null());
  CHECK(full.at("pre_rollback_error") == "no space");
  r.pre_rollback_error = caf::none;
  r.pre_rollback_checkpoint_id = "pre-rollback-1";
  auto kept = to_json(r);
  CHECK(kept.at("pre_rollback_checkpoint_id") == "pre-rollback-1");
  CHECK_FALSE(kept.contains("pre_rollback_error"));
}
