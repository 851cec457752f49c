// SPDX-License-Identifier: Apache-2.0
// Commands of the store and of agents: one struct per RPC action, decoded
// once by the RPC actor (cmd::decode, messages/commands/command.hpp) and
// answered by the AGENTS actor (store.initialize, agent.list) or, through
// it, by the AGENT actor of the agent they name.
#pragma once

#include "messages/commands/command.hpp"
#include "messages/records.hpp"
#include "messages/results/admin.hpp"
#include "messages/results/agents.hpp"
#include "messages/results/sessions.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

namespace allox::cmd {

/// store.initialize {}: checks the store and audits the call.
struct store_initialize {
  static inline const char* name = "store.initialize";
  static store_initialize decode(params::reader& r);
  using reply = store_initialized;
};

/// agent.list {}: every agent id, sorted.
struct agent_list {
  static inline const char* name = "agent.list";
  static agent_list decode(params::reader& r);
  using reply = agent_ids;
};

/// agent.create {agent_id, origin?}: creates the agent, or audits the call
/// again when it exists (idempotent).
struct agent_create {
  static inline const char* name = "agent.create";
  static agent_create decode(params::reader& r);
  using reply = agent_view;
  std::string agent_id;
  std::string origin;
};

/// agent.describe {agent_id}.
struct agent_describe {
  static inline const char* name = "agent.describe";
  static agent_describe decode(params::reader& r);
  using reply = agent_view;
  std::string agent_id;
};

/// agent.delete {agent_id, origin?}: every session, then the agent.
struct agent_delete {
  static inline const char* name = "agent.delete";
  static agent_delete decode(params::reader& r);
  using reply = agent_deleted;
  std::string agent_id;
  std::string origin;
};

/// session.create {agent_id, session_id, origin?}: creates the agent too
/// when it does not exist yet.
struct session_create {
  static inline const char* name = "session.create";
  static session_create decode(params::reader& r);
  using reply = session_view;
  session_ref session;
  std::string origin;
};

/// session.fork {agent_id, session_id, new_session_id, checkpoint_id?,
/// origin?}: a new session of the same agent from a checkpoint of the
/// source (or from its current/ checkpointed first).
struct session_fork {
  static inline const char* name = "session.fork";
  static session_fork decode(params::reader& r);
  using reply = session_forked;
  /// The source.
  session_ref session;
  std::string new_session_id;
  /// Empty: checkpoint the source's current/ first.
  std::string checkpoint_id;
  std::string origin;
};

/// session.list {agent_id}.
struct session_list {
  static inline const char* name = "session.list";
  static session_list decode(params::reader& r);
  using reply = session_ids;
  std::string agent_id;
};

/// session.delete {agent_id, session_id, origin?} as it reaches the AGENT,
/// which sends the session its cmd::session_delete and forgets it.
struct session_delete_request {
  static inline const char* name = "session.delete";
  static session_delete_request decode(params::reader& r);
  using reply = session_deleted;
  session_ref session;
  std::string origin;
};

/// debug.fault {agent_id, point, effect, millis?} without a session_id:
/// arms a fault in the AGENT actor (test builds).
struct agent_debug_fault {
  static inline const char* name = "debug.fault";
  using reply = fault_armed;
  std::string agent_id;
  std::string point;
  std::string effect;
  uint32_t millis = 0;
};

/// The agent a command is for (AGENTS routes by it).
template <class Command>
const std::string& agent_of(const Command& c) {
  return c.agent_id;
}
inline const std::string& agent_of(const session_create& c) {
  return c.session.agent_id;
}
inline const std::string& agent_of(const session_fork& c) {
  return c.session.agent_id;
}
inline const std::string& agent_of(const session_delete_request& c) {
  return c.session.agent_id;
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, store_initialize&) {
  return f(caf::meta::type_name("store_initialize"));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_list&) {
  return f(caf::meta::type_name("agent_list"));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_create& x) {
  return f(caf::meta::type_name("agent_create"), x.agent_id, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_describe& x) {
  return f(caf::meta::type_name("agent_describe"), x.agent_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_delete& x) {
  return f(caf::meta::type_name("agent_delete"), x.agent_id, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_create& x) {
  return f(caf::meta::type_name("session_create"), x.session, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_fork& x) {
  return f(caf::meta::type_name("session_fork"), x.session, x.new_session_id,
           x.checkpoint_id, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_list& x) {
  return f(caf::meta::type_name("session_list"), x.agent_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f,
                                        session_delete_request& x) {
  return f(caf::meta::type_name("session_delete_request"), x.session, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_debug_fault& x) {
  return f(caf::meta::type_name("agent_debug_fault"), x.agent_id, x.point,
           x.effect, x.millis);
}

} // namespace allox::cmd
