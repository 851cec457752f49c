// SPDX-License-Identifier: Apache-2.0
// Decoders of the turn.* and policy.* commands (messages/commands/turns.hpp).
#include "messages/commands/decode.hpp"
#include "messages/commands/decode_detail.hpp"
#include "messages/params.hpp"

namespace allox::cmd {

// -- turns and policy ---------------------------------------------------------

expected<turn_session_start> decode_turn_session_start(const json::object& p) {
  auto rid = params::optional_string(p, "runtime_session_id");
  if (!rid)
    return rid.error();
  turn_session_start c;
  c.runtime_session_id = std::move(*rid);
  return c;
}

expected<turn_message> decode_turn_message(const json::object& p) {
  auto* m = p.if_contains("message");
  if (m == nullptr)
    return invalid("missing parameter: message");
  turn_message c;
  // As the reference adapter: anything but a string captures nothing.
  if (m->is_string())
    c.message = std::string{m->get_string()};
  return c;
}

expected<turn_end> decode_turn_end(const json::object& p) {
  auto id = params::optional_string(p, "turn_id");
  if (!id)
    return id.error();
  auto completed = params::optional_bool(p, "completed", true);
  if (!completed)
    return completed.error();
  auto interrupted = params::optional_bool(p, "interrupted", false);
  if (!interrupted)
    return interrupted.error();
  turn_end c;
  c.turn_id = std::move(*id);
  c.completed = *completed;
  c.interrupted = *interrupted;
  return c;
}

expected<turn_status> decode_turn_status(const json::object&) {
  return turn_status{};
}

expected<policy_get> decode_policy_get(const json::object&) {
  return policy_get{};
}

expected<policy_set> decode_policy_set(const json::object& p) {
  auto change = decode_policy_change(p);
  if (!change)
    return change.error();
  policy_set c;
  c.change = std::move(*change);
  c.origin = params::origin(p);
  return c;
}

} // namespace allox::cmd
