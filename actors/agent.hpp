// SPDX-License-Identifier: Apache-2.0
// The AGENT actor: owns agents/<a>/workspace (shared/, sessions/) and
// supervises one SESSION actor per session. A session actor that fails is
// re-spawned from its persisted row, with a restart budget.
#pragma once

#include "actors/session/session.hpp"
#include "guest/faults.hpp"
#include "guest/store/layout.hpp"
#include "messages/actors.hpp"
#include "messages/fork_signal.hpp"

#include <chrono>
#include <deque>
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
};

/// Where a supervised child (a session of an AGENT, an agent of AGENTS)
/// is; system.dump prints it.
enum class child_status {
  /// Its actor serves.
  running,
  /// Being created; requests for it wait or get not_found.
  creating,
  /// Failed; its replacement is being loaded.
  restarting,
  /// Being deleted.
  deleting,
  /// Failed more often than the restart budget allows; left for an
  /// operator.
  failed,
};

/// The status's name, as system.dump shows it.
inline const char* to_string(child_status s) {
  switch (s) {
  case child_status::running:
    return "running";
  case child_status::creating:
    return "creating";
  case child_status::restarting:
    return "restarting";
  case child_status::deleting:
    return "deleting";
  case child_status::failed:
    return "failed";
  }
  return "unknown";
}

/// Where an AGENT is in its life.
enum class agent_phase {
  idle,
  /// agent.delete runs: every request is refused with conflict.
  deleting,
};

struct session_entry {
  session_actor handle;
  session_row row;
  uint32_t restarts = 0;
  std::deque<std::chrono::steady_clock::time_point> recent_failures;
  child_status status = child_status::running;
};

struct agent_state {
  static inline const char* name = "agent";

  agent_init init;
  std::map<std::string, session_entry> sessions;
  agent_phase phase = agent_phase::idle;
  /// Set by the parent's exit: the agent ends with this reason once every
  /// session has ended (their last writes come first; docs/architecture.md,
  /// "Shutdown").
  bool stopping = false;
  caf::error stop_reason;
  /// The action being handled, for the failure log.
  std::string handling;
  uint64_t requests = 0;
  uint64_t failures = 0;
  std::chrono::steady_clock::time_point started;
  fault_set faults;
};

/// Restarts allowed per child within `restart_window` before the child is
/// marked failed and left for an operator.
inline constexpr size_t max_restarts_per_window = 5;
inline constexpr std::chrono::seconds restart_window{60};

/// Records a failure now; false when the child exceeded its budget.
inline bool within_restart_budget(
    std::deque<std::chrono::steady_clock::time_point>& failures) {
  auto now = std::chrono::steady_clock::now();
  failures.push_back(now);
  while (!failures.empty() && now - failures.front() > restart_window)
    failures.pop_front();
  return failures.size() <= max_restarts_per_window;
}

/// Runs a request's handler with `handling` naming its action for the
/// failure log: left set if the handler throws, cleared once it returned.
template <class Handler>
auto while_handling(std::string& handling, const char* action,
                    Handler handler) {
  handling = action;
  auto result = handler();
  handling.clear();
  return result;
}

agent_actor::behavior_type
agent(agent_actor::stateful_pointer<agent_state> self, agent_init init);

/// The agent.create result.
json::object describe_agent_workspace(const std::string& agent_id);

/// Creates the agent's directories if missing (blocking).
caf::error ensure_agent_dirs(const store::layout& paths,
                             const std::string& agent_id);

} // namespace allox
