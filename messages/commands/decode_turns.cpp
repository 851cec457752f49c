// SPDX-License-Identifier: Apache-2.0
// Decoders of the turn.* and policy.* commands (messages/commands/turns.hpp).
#include "messages/commands/turns.hpp"

namespace allox::cmd {

turn_session_start turn_session_start::decode(params::reader& r) {
  turn_session_start c;
  c.runtime_session_id = r.optional_string("runtime_session_id");
  return c;
}

turn_message turn_message::decode(params::reader& r) {
  turn_message c;
  auto* m = r.params().if_contains("message");
  r.check(m != nullptr, "missing parameter: message");
  // As the reference adapter: anything but a string captures nothing.
  if (m != nullptr && m->is_string())
    c.message = std::string{m->get_string()};
  return c;
}

turn_end turn_end::decode(params::reader& r) {
  turn_end c;
  c.turn_id = r.optional_string("turn_id");
  c.completed = r.optional_bool("completed", true);
  c.interrupted = r.optional_bool("interrupted", false);
  return c;
}

turn_status turn_status::decode(params::reader&) {
  return {};
}

policy_get policy_get::decode(params::reader&) {
  return {};
}

policy_set policy_set::decode(params::reader& r) {
  policy_set c;
  c.change = r.take(decode_policy_change(r.params()));
  c.origin = r.origin();
  return c;
}

} // namespace allox::cmd
