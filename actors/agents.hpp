// SPDX-License-Identifier: Apache-2.0
// The AGENTS actor: registry and supervisor of agent actors. At start it
// reconciles the store with the catalog and spawns an actor for every agent
// (which spawn their sessions); afterwards it creates agents on demand and
// routes agent- and store-level actions.
#pragma once

#include "actors/agent.hpp"
#include "actors/supervision.hpp"
#include "guest/store/layout.hpp"
#include "messages/actors.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace allox {

/// An agent's slot: its actor, status and budget, and the row its
/// replacement starts from.
struct agent_slot : supervision::child_slot<agent_actor> {
  agent_row row;
  /// Handed to every AGENT spawned for this slot.
  std::shared_ptr<fork_ledger> forks = std::make_shared<fork_ledger>();
};

/// A request for an agent that is being created: called once the agent
/// exists (no error; it sends its command on) or its creation failed (it
/// answers its caller with the error).
using queued_call = std::function<void(const caf::error&)>;

/// Stopping (by the SUPERVISOR's exit), the failure log's action and the
/// counters come with supervision::supervisor_base.
struct agents_state : supervision::supervisor_base {
  static inline const char* name = "agents";

  store::layout paths;
  metadata_actor metadata;
  std::shared_ptr<const exec_config> exec;
  std::map<std::string, agent_slot> agents;
  std::map<std::string, std::vector<queued_call>> creating;
  bool ready = false;
  std::chrono::steady_clock::time_point started;
};

/// `parent` is the SUPERVISOR; only its exit stops the registry.
agents_actor::behavior_type
agents(agents_actor::stateful_pointer<agents_state> self, store::layout paths,
       metadata_actor metadata, caf::actor_addr parent,
       std::shared_ptr<const exec_config> exec);

} // namespace allox
