// SPDX-License-Identifier: Apache-2.0
// Decoders of the store.*, agent.* and session create/fork/list/delete
// commands (messages/commands/agents.hpp). These decode the ids too:
// AGENTS routes by the agent id, and the AGENT by the session id.
#include "messages/commands/agents.hpp"

#include <type_traits>

namespace allox::cmd {

namespace {

/// True for commands that carry the `origin` their handler audits.
template <class Command, class = void>
struct audited : std::false_type {};

template <class Command>
struct audited<Command, std::void_t<decltype(Command::origin)>>
    : std::true_type {};

/// A command naming an agent: "missing string parameter: agent_id", or
/// "invalid agent id: ..." (messages/ids.hpp).
template <class Command>
Command for_agent(params::reader& r) {
  Command c;
  c.agent_id = r.required_id("agent_id", "agent");
  if constexpr (audited<Command>::value)
    c.origin = r.origin();
  return c;
}

/// A command naming a session of an agent; the agent id is checked first.
template <class Command>
Command for_session(params::reader& r) {
  Command c;
  c.session.agent_id = r.required_id("agent_id", "agent");
  c.session.session_id = r.required_id("session_id", "session");
  c.origin = r.origin();
  return c;
}

} // namespace

store_initialize store_initialize::decode(params::reader&) {
  return {};
}

agent_list agent_list::decode(params::reader&) {
  return {};
}

agent_create agent_create::decode(params::reader& r) {
  return for_agent<agent_create>(r);
}

agent_describe agent_describe::decode(params::reader& r) {
  return for_agent<agent_describe>(r);
}

agent_delete agent_delete::decode(params::reader& r) {
  return for_agent<agent_delete>(r);
}

session_create session_create::decode(params::reader& r) {
  return for_session<session_create>(r);
}

session_fork session_fork::decode(params::reader& r) {
  session_fork c;
  auto source = for_session<session_create>(r);
  c.session = std::move(source.session);
  c.new_session_id = r.required_id("new_session_id", "session");
  r.check(c.new_session_id != c.session.session_id,
          "new_session_id must differ from session_id");
  // Workspaces of agents share data only through share.*.
  const auto* other = r.params().if_contains("new_agent_id");
  r.check(other == nullptr ||
              (other->is_string() && other->get_string() == c.session.agent_id),
          "fork into another agent is refused");
  c.checkpoint_id = r.optional_string("checkpoint_id");
  c.origin = r.origin();
  return c;
}

session_list session_list::decode(params::reader& r) {
  return for_agent<session_list>(r);
}

session_delete_request session_delete_request::decode(params::reader& r) {
  return for_session<session_delete_request>(r);
}

} // namespace allox::cmd
