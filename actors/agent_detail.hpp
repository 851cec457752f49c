// SPDX-License-Identifier: Apache-2.0
// Internal header of the AGENT actor: what agent.cpp and agent_fork.cpp
// share. Not included elsewhere.
#pragma once

#include "actors/agent.hpp"

#include <string>
#include <vector>

namespace allox::agent_detail {

using self_ptr = agent_actor::stateful_pointer<agent_state>;

/// An audit record of `op`, stamped now.
audit_event audit(const std::string& op, const std::string& agent_id,
                  const std::string& session_id, json::object fields);

/// The runs that fence session `sid` (interrupted by a restart).
std::vector<std::string> fenced_runs(self_ptr self, const std::string& sid);

/// Spawns the actor of session `e` with its checkpoints; `unsynced` names
/// those whose rows are not yet durable in the catalog (their intent
/// records are), for the session's idle work to sync.
void spawn_session(self_ptr self, session_entry& e,
                   std::vector<checkpoint_row> checkpoints,
                   std::vector<std::string> unsynced = {});

/// session.fork (agent_fork.cpp).
caf::result<session_forked> handle(self_ptr self, const cmd::session_fork& c);

/// policy.get without a session_id: the agent's level (agent_policy.cpp).
caf::result<policy_view> handle(self_ptr self, const cmd::policy_get& c);

/// policy.set without a session_id: the agent's level, committed and told
/// to its sessions (agent_policy.cpp).
caf::result<policy_view> handle(self_ptr self, const cmd::policy_set& c);

} // namespace allox::agent_detail
