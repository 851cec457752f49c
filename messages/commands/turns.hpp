// SPDX-License-Identifier: Apache-2.0
// Commands of a session's turns facet (turn lifecycle events and the
// automatic checkpoint policy): one struct per RPC action, decoded once by
// the RPC actor (messages/commands/command.hpp) and answered by the
// SESSION's handler for that type (policy.get/set without a session_id by
// the AGENT's).
#pragma once

#include "messages/commands/command.hpp"
#include "messages/policy.hpp"
#include "messages/records.hpp"
#include "messages/results/turns.hpp"

#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <string>

namespace allox::cmd {

/// turn.session_start {runtime_session_id?}: the baseline checkpoint, once.
struct turn_session_start {
  static inline const char* name = "turn.session_start";
  static turn_session_start decode(params::reader& r);
  using reply = turn_result;
  session_ref session;
  std::string runtime_session_id;
};

/// turn.message {message}: the next turn checkpoint's message.
struct turn_message {
  static inline const char* name = "turn.message";
  static turn_message decode(params::reader& r);
  using reply = turn_result;
  session_ref session;
  /// Empty when the message was empty or not a string (nothing captured).
  std::string message;
};

/// turn.end {turn_id?, completed?, interrupted?}: a checkpoint per turn.
struct turn_end {
  static inline const char* name = "turn.end";
  static turn_end decode(params::reader& r);
  using reply = turn_result;
  session_ref session;
  std::string turn_id;
  bool completed = true;
  bool interrupted = false;
};

/// turn.status: the session's turn state and whether turns are enabled.
struct turn_status {
  static inline const char* name = "turn.status";
  static turn_status decode(params::reader& r);
  using reply = turn_status_view;
  session_ref session;
};

/// policy.get {session_id?}: the effective policy and where each field
/// comes from. Without a session_id (empty) the agent's level.
struct policy_get {
  static inline const char* name = "policy.get";
  static policy_get decode(params::reader& r);
  using reply = policy_view;
  session_ref session;
};

/// policy.set {session_id?, fields..., origin?}: sets (or, with null,
/// clears) fields of the session's level, or the agent's without a
/// session_id.
struct policy_set {
  static inline const char* name = "policy.set";
  static policy_set decode(params::reader& r);
  using reply = policy_view;
  session_ref session;
  policy_change change;
  std::string origin;
};

/// The agent's policy changed: its AGENT tells every session actor.
struct agent_policy_changed {
  /// The agent's level as catalog text (messages/policy.hpp).
  caf::optional<std::string> policy;
};

/// An interval checkpoint is due (a session sends it to itself); ticks of
/// an older arming (`epoch`) are ignored.
struct interval_tick {
  uint64_t epoch = 0;
};

/// The agent a policy command is for (AGENTS routes by it).
inline const std::string& agent_of(const policy_get& c) {
  return c.session.agent_id;
}
inline const std::string& agent_of(const policy_set& c) {
  return c.session.agent_id;
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, turn_session_start& x) {
  return f(caf::meta::type_name("turn_session_start"), x.session,
           x.runtime_session_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, turn_message& x) {
  return f(caf::meta::type_name("turn_message"), x.session, x.message);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, turn_end& x) {
  return f(caf::meta::type_name("turn_end"), x.session, x.turn_id, x.completed,
           x.interrupted);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, turn_status& x) {
  return f(caf::meta::type_name("turn_status"), x.session);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, policy_get& x) {
  return f(caf::meta::type_name("policy_get"), x.session);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, policy_set& x) {
  return f(caf::meta::type_name("policy_set"), x.session, x.change, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_policy_changed& x) {
  return f(caf::meta::type_name("agent_policy_changed"), x.policy);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, interval_tick& x) {
  return f(caf::meta::type_name("interval_tick"), x.epoch);
}

} // namespace allox::cmd
