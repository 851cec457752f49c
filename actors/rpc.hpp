// The RPC actor: receives validated requests from the HTTP thread, routes
// each to the actor that owns it (session actors directly, through a
// monitored handle cache), and posts the encoded reply back. Every request
// gets exactly one reply: a result, an error, or `internal` when the owning
// actor fails or times out.
#pragma once

#include "actors/session_runs.hpp"
#include "messages/actors.hpp"
#include "messages/rpc.hpp"

#include <chrono>
#include <string>
#include <unordered_map>

namespace allox {

struct rpc_init {
  supervisor_actor supervisor;
  agents_actor agents;
  metadata_actor metadata;
  reply_channel* channel = nullptr;
  /// Static facts about the daemon for system.dump (pid, root, listen ...).
  json::object daemon_info;
  /// Tracked execution; null when disabled (process.status).
  std::shared_ptr<const exec_config> exec;
};

struct rpc_state {
  static inline const char* name = "rpc";

  rpc_init init;
  /// (agent/session) -> owning actor; entries leave when the actor dies.
  std::unordered_map<std::string, session_actor> sessions;
  /// Requests sent to a session actor and not answered yet, so a failing
  /// actor's callers are answered at once.
  std::unordered_map<uint64_t, caf::actor_addr> in_flight;
  /// Lease and reset tokens -> (agent, session), learned from the replies
  /// that hand them out: execution.release and runtime.complete_reset name
  /// only the token.
  std::unordered_map<std::string, std::pair<std::string, std::string>> tokens;
  uint64_t requests = 0;
  uint64_t errors = 0;
  std::chrono::steady_clock::time_point started;
};

/// How long any routed request may take before the caller gets `internal`.
inline constexpr std::chrono::seconds rpc_timeout{300};

rpc_actor::behavior_type rpc(rpc_actor::stateful_pointer<rpc_state> self,
                             rpc_init init);

/// True for actions answered by the session actor itself.
bool is_session_action(const std::string& action);

} // namespace allox
