// SPDX-License-Identifier: Apache-2.0
// Automatic checkpoint policy: what one level (an agent, a session) sets,
// and the effective policy of a session, where each field comes from the
// session's setting, else its agent's, else the daemon default (every
// automatic checkpoint off, as in the reference).
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace allox {

/// The settings of one level; an unset field inherits.
struct checkpoint_policy {
  /// A checkpoint at each turn.session_start and turn.end.
  caf::optional<bool> auto_checkpoint_turns;
  /// A checkpoint after each run that completed with exit code 0.
  caf::optional<bool> auto_checkpoint_runs;
  /// Seconds between interval checkpoints; 0 is off.
  caf::optional<int64_t> interval_seconds;
  /// Automatic checkpoints kept; 0 keeps all.
  caf::optional<int64_t> keep_auto;
  /// A failed automatic checkpoint fails the turn or run reply.
  caf::optional<bool> strict;
  /// A rollback keeps the tree it replaces as a checkpoint (origin
  /// `pre-rollback`), so it can be undone; unset follows
  /// auto_checkpoint_turns.
  caf::optional<bool> keep_pre_rollback;
};

/// The policy in force for one session.
struct effective_policy {
  bool auto_checkpoint_turns = false;
  bool auto_checkpoint_runs = false;
  int64_t interval_seconds = 0;
  int64_t keep_auto = 0;
  bool strict = false;
  bool keep_pre_rollback = false;
};

/// A policy.set: fields to set, and fields to clear (given as null).
struct policy_change {
  checkpoint_policy set;
  std::vector<std::string> cleared;
};

/// The field names, as policy.get/set spell them.
const std::vector<std::string>& policy_fields();

/// A level's settings from its catalog text (none or bad text: nothing).
checkpoint_policy parse_policy(const caf::optional<std::string>& text);

/// A level's settings as catalog text; none when nothing is set.
caf::optional<std::string> serialize_policy(const checkpoint_policy& p);

/// The fields a level sets, as a JSON object.
json::object to_json(const checkpoint_policy& p);

/// The fields of a policy.set (unknown keys are ignored); null clears a
/// field. Refuses wrong types and out-of-range numbers.
expected<policy_change> decode_policy_change(const json::object& params);

/// `p` with `c` applied.
checkpoint_policy apply(checkpoint_policy p, const policy_change& c);

/// The session's setting, else the agent's, else the default.
effective_policy resolve(const checkpoint_policy& agent,
                         const checkpoint_policy& session);

/// policy.get's result: {policy, sources, agent, session?}. Each field of
/// `sources` is "session", "agent" or "default". `with_session` false
/// describes an agent's level alone.
json::object describe_policy(const checkpoint_policy& agent,
                             const checkpoint_policy& session,
                             bool with_session);

/// policy.get and policy.set: the levels of one agent or session and the
/// policy they resolve to.
struct policy_view {
  std::string agent_id;
  /// Empty for the agent's level alone.
  std::string session_id;
  checkpoint_policy agent;
  /// The session's level; none for the agent's.
  caf::optional<checkpoint_policy> session;

  /// The policy in force (for an agent: what its sessions get by default).
  effective_policy effective() const {
    return resolve(agent, session ? *session : checkpoint_policy{});
  }
};

/// The native wire's policy.get result: describe_policy's object, then
/// agent_id and, for a session, session_id.
json::object to_json(const policy_view& v);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_policy& x) {
  return f(caf::meta::type_name("checkpoint_policy"), x.auto_checkpoint_turns,
           x.auto_checkpoint_runs, x.interval_seconds, x.keep_auto, x.strict,
           x.keep_pre_rollback);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, policy_change& x) {
  return f(caf::meta::type_name("policy_change"), x.set, x.cleared);
}

} // namespace allox

// Local messages only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::policy_view)
