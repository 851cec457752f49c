// SPDX-License-Identifier: Apache-2.0
// The turns facet's results and their native JSON: each shape the
// reference adapter answers, key for key and in its order.
#include "messages/results/checkpoints_json.hpp"
#include "messages/results/turns_json.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace allox;

namespace {

std::string text(const turn_result& r) {
  return json::serialize(to_json(r));
}

turn_result skip(const char* event, turn_skip why, std::string id = {}) {
  turn_result r;
  r.enabled = why != turn_skip::disabled;
  r.event = event;
  r.skipped = why;
  r.turn_id = std::move(id);
  return r;
}

} // namespace

TEST_CASE("turn results: a skipped event says why, and only a turn.end "
          "skipped for its id or a rollback names the turn") {
  CHECK(text(skip("turn_end", turn_skip::disabled)) ==
        R"({"enabled":false,"event":"turn_end","created":false,)"
        R"("skipped":"disabled"})");
  CHECK(text(skip("session_start", turn_skip::duplicate)) ==
        R"({"enabled":true,"event":"session_start","created":false,)"
        R"("skipped":"duplicate"})");
  CHECK(text(skip("turn_end", turn_skip::duplicate, "t1")) ==
        R"({"enabled":true,"event":"turn_end","created":false,)"
        R"("skipped":"duplicate","turn_id":"t1"})");
  // A turn.end without an id after a rollback: the id is null.
  CHECK(text(skip("turn_end", turn_skip::rollback)) ==
        R"({"enabled":true,"event":"turn_end","created":false,)"
        R"("skipped":"rollback","turn_id":null})");
}

TEST_CASE("turn results: turn.message says whether it captured the text") {
  turn_result r;
  r.enabled = false;
  r.event = "message_received";
  r.captured = true;
  CHECK(text(r) ==
        R"({"enabled":false,"event":"message_received","captured":true})");
}

TEST_CASE("turn results: an automatic checkpoint is the created row and "
          "what keep_auto pruned, or the error that did not block") {
  auto_checkpoint_result failed;
  failed.event = "turn_end";
  failed.checkpoint_id = "0a1b2c3d";
  failed.error = "no space";
  turn_result r;
  r.enabled = true;
  r.event = "turn_end";
  r.checkpoint = failed;
  CHECK(text(r) == R"({"enabled":true,"event":"turn_end","created":false,)"
                   R"("checkpoint_id":"0a1b2c3d","error":"no space",)"
                   R"("non_blocking":true})");

  auto_checkpoint_result made = failed;
  made.error.clear();
  checkpoint_created cp;
  cp.row.agent_id = "a";
  cp.row.session_id = "s";
  cp.row.checkpoint_id = "0a1b2c3d";
  made.checkpoint = cp;
  auto plain = to_json(made);
  CHECK(plain.at("created") == true);
  CHECK(plain.at("checkpoint") == to_json(cp));
  CHECK_FALSE(plain.contains("pruned")); // only when keep_auto deleted some
  CHECK_FALSE(plain.contains("error"));
  made.pruned = {"old1", "old2"};
  auto pruned = to_json(made);
  CHECK(pruned.at("pruned") == json::array{"old1", "old2"});
  // The keys in the adapter's order.
  std::string keys;
  for (const auto& kv : pruned)
    keys += std::string{kv.key()} + ",";
  CHECK(keys == "enabled,event,created,checkpoint_id,checkpoint,pruned,");
}

TEST_CASE("turn results: turn.status spells an absent runtime session as "
          "null") {
  turn_status_view s{true, "a", "s", 3, true, false, ""};
  CHECK(json::serialize(to_json(s)) ==
        R"({"enabled":true,"agent_id":"a","session_id":"s","turn_count":3,)"
        R"("session_started":true,"skip_next_auto_checkpoint":false,)"
        R"("runtime_session_id":null})");
}
