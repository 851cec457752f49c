// SPDX-License-Identifier: Apache-2.0
#include "messages/results/turns_json.hpp"

#include "messages/results/checkpoints_json.hpp"
#include "messages/results/json_detail.hpp"

namespace allox {

using results_detail::strings;

// The reference adapter's keys in its order: a failure names its error
// and that it did not block; `pruned` only when keep_auto deleted any.
json::object to_json(const auto_checkpoint_result& r) {
  json::object o{{"enabled", true},
                 {"event", r.event},
                 {"created", static_cast<bool>(r.checkpoint)},
                 {"checkpoint_id", r.checkpoint_id}};
  if (r.checkpoint) {
    o["checkpoint"] = to_json(*r.checkpoint);
  } else {
    o["error"] = r.error;
    o["non_blocking"] = true;
  }
  if (!r.pruned.empty())
    o["pruned"] = strings(r.pruned);
  return o;
}

json::object to_json(const turn_result& r) {
  if (r.checkpoint)
    return to_json(*r.checkpoint);
  json::object o{{"enabled", r.enabled}, {"event", r.event}};
  if (r.captured) {
    o["captured"] = *r.captured;
    return o;
  }
  o["created"] = false;
  o["skipped"] = to_string(r.skipped);
  // A turn.end skipped for its id or a rollback names the turn; a
  // duplicate session start has none.
  bool named =
      r.skipped == turn_skip::duplicate || r.skipped == turn_skip::rollback;
  if (named && r.event == "turn_end")
    o["turn_id"] =
        r.turn_id.empty() ? json::value(nullptr) : json::value(r.turn_id);
  return o;
}

json::object to_json(const turn_status_view& s) {
  return {{"enabled", s.enabled},
          {"agent_id", s.agent_id},
          {"session_id", s.session_id},
          {"turn_count", s.turn_count},
          {"session_started", s.session_started},
          {"skip_next_auto_checkpoint", s.skip_next_auto_checkpoint},
          {"runtime_session_id", s.runtime_session_id.empty()
                                     ? json::value(nullptr)
                                     : json::value(s.runtime_session_id)}};
}

} // namespace allox
