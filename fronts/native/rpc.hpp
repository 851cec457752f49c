// SPDX-License-Identifier: Apache-2.0
// The RPC actor: receives the native front's decoded requests, routes
// each to the actor that owns it (session actors directly, through a
// monitored handle cache), and hands the encoded reply to the request's
// reply function. Every request gets exactly one reply: a result, an
// error, or `internal` when the owning actor fails or times out.
#pragma once

#include "actors/session/session_runs.hpp"
#include "messages/actors.hpp"
#include "messages/rpc.hpp"

#include <chrono>
#include <deque>
#include <string>
#include <unordered_map>

namespace allox {

/// How long a request may take by default before its caller gets
/// `internal`.
/// Enforced by the RPC actor itself: CAF's per-request timeouts keep an
/// entry in the actor clock until they expire, even for answered
/// requests, so memory grew with the request rate times this timeout.
inline constexpr std::chrono::seconds rpc_timeout{300};

/// How often expired requests are looked for while any are pending.
inline constexpr std::chrono::seconds rpc_tick{1};

struct rpc_init {
  supervisor_actor supervisor;
  agents_actor agents;
  metadata_actor metadata;
  /// Static facts about the daemon for system.dump (pid, root, listen ...).
  json::object daemon_info;
  /// Tracked execution; null when disabled (process.status).
  std::shared_ptr<const exec_config> exec;
  /// How long a request may take before its caller gets `internal`.
  std::chrono::milliseconds timeout = rpc_timeout;
};

/// A request the RPC actor has routed and not answered yet.
struct pending_request {
  /// Where its reply goes, on the native wire.
  reply_fn reply;
  /// Or, for a bulk transfer's step, where its typed answer goes.
  transfer_answer transfer;
  /// The session actor serving it; null for any other target.
  caf::actor_addr owner;
};

struct rpc_state {
  static inline const char* name = "rpc";

  rpc_init init;
  /// (agent/session) -> owning actor; entries leave when the actor dies.
  std::unordered_map<std::string, session_actor> sessions;
  /// Every request not answered yet: its session actor, if it went to one
  /// (so a failing actor's callers are answered at once), and its deadline.
  std::unordered_map<uint64_t, pending_request> in_flight;
  /// (deadline, ticket) in arrival order, which is deadline order: the
  /// tick answers the expired front. Entries of answered tickets are
  /// skipped when they reach the front.
  std::deque<std::pair<std::chrono::steady_clock::time_point, uint64_t>>
      deadlines;
  bool tick_armed = false;
  /// The next request's ticket (the key of in_flight).
  uint64_t next_ticket = 1;
  /// Lease and reset tokens -> (agent, session), learned from the replies
  /// that hand them out: execution.release and runtime.complete_reset name
  /// only the token.
  std::unordered_map<std::string, std::pair<std::string, std::string>> tokens;
  /// The action being dispatched, for the failure log.
  std::string handling;
  uint64_t requests = 0;
  uint64_t errors = 0;
  std::chrono::steady_clock::time_point started;
};

rpc_actor::behavior_type rpc(rpc_actor::stateful_pointer<rpc_state> self,
                             rpc_init init);

} // namespace allox
