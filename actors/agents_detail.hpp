// SPDX-License-Identifier: Apache-2.0
// Internal header of the AGENTS actor: what agents.cpp and
// agents_recovery.cpp share. Not included elsewhere.
#pragma once

#include "actors/agents.hpp"

#include <map>
#include <string>
#include <vector>

namespace allox::agents_detail {

using self_ptr = agents_actor::stateful_pointer<agents_state>;

/// Spawns the AGENT of `slot` with its sessions and their checkpoints;
/// `fenced` names, by session, the runs a crash interrupted; `adopted`
/// holds the rows of live runs that outlived the daemon (start-up only).
void spawn_agent(self_ptr self, agent_slot& slot,
                 std::vector<session_row> sessions,
                 std::vector<checkpoint_row> checkpoints,
                 std::map<std::string, std::vector<std::string>> fenced = {},
                 std::map<std::string, std::vector<run_row>> adopted = {});

/// agents.load: start-up recovery, then an AGENT for every agent; replies
/// with the summary (agents_recovery.cpp).
caf::result<recovery_summary> recover(self_ptr self);

} // namespace allox::agents_detail
