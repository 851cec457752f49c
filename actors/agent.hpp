// SPDX-License-Identifier: Apache-2.0
// The AGENT actor: owns agents/<a>/workspace (shared/, sessions/) and
// supervises one SESSION actor per session. A session actor that fails is
// re-spawned from its persisted row, with a restart budget.
#pragma once

#include "actors/session/session.hpp"
#include "actors/supervision.hpp"
#include "guest/store/layout.hpp"
#include "messages/actors.hpp"
#include "messages/fork_signal.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace allox {

/// The baselines of forks still being made, by session of one agent. The
/// AGENTS actor keeps it in the agent's slot and hands it to each AGENT it
/// spawns, so that the replacement of an agent that failed mid-fork
/// spawns its sessions waiting for them as the first did (the old lanes
/// go on making them). Only the running AGENT touches it.
struct fork_ledger {
  struct pending {
    /// The session's own baseline, still being made when its fork
    /// answered: every spawn of the session waits for it
    /// (messages/fork_signal.hpp).
    fork_ready baseline_ready{};
    /// Baselines of forks from this session's checkpoints, made on its
    /// lane: a respawned session (its old lane may still be making one)
    /// waits for them as the first did.
    std::vector<fork_ready> forks_out{};
  };
  std::map<std::string, pending> sessions;
};

struct agent_init {
  agent_row row;
  std::vector<session_row> sessions;
  std::vector<checkpoint_row> checkpoints;
  uint32_t restarts = 0;
  store::layout paths;
  metadata_actor metadata;
  /// The AGENTS actor; only its exit stops this agent.
  caf::actor_addr parent;
  std::shared_ptr<const exec_config> exec;
  /// session id -> runs interrupted by a restart (they fence the session).
  std::map<std::string, std::vector<std::string>> fenced_runs;
  /// Outlives this actor (see fork_ledger).
  std::shared_ptr<fork_ledger> forks = std::make_shared<fork_ledger>();
  /// session id -> rows of live runs that outlived the daemon, handed to
  /// the session's first actor only (a later one kills its cgroup first).
  std::map<std::string, std::vector<run_row>> adopted_runs{};
};

/// Where an AGENT is in its life.
enum class agent_phase {
  idle,
  /// agent.delete runs: every request is refused with conflict.
  deleting,
};

/// A session's slot: its actor, status and budget, and the row its
/// replacement starts from.
struct session_entry : supervision::child_slot<session_actor> {
  session_row row;
};

/// Stopping, the failure log's action, the counters and the fault points
/// come with supervision::supervisor_base.
struct agent_state : supervision::supervisor_base {
  static inline const char* name = "agent";

  agent_init init;
  std::map<std::string, session_entry> sessions;
  agent_phase phase = agent_phase::idle;
  std::chrono::steady_clock::time_point started;
};

agent_actor::behavior_type
agent(agent_actor::stateful_pointer<agent_state> self, agent_init init);

/// The agent.create result.
agent_view describe_agent_workspace(const std::string& agent_id);

/// Creates the agent's directories if missing (blocking).
caf::error ensure_agent_dirs(const store::layout& paths,
                             const std::string& agent_id);

} // namespace allox
