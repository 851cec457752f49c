// SPDX-License-Identifier: Apache-2.0
// The SUPERVISOR: root of the actor tree. It spawns METADATA (detached),
// AGENTS and the native front's RPC actor (through the daemon's factory:
// the core never includes a front), answers the stats of the whole tree,
// and treats the failure of any direct child as fatal for the daemon:
// without its catalog or registry the daemon cannot keep its promises, so
// it stops serving and lets the service manager restart it (start-up
// recovery then runs).
#pragma once

#include "actors/session/session_runs.hpp"
#include "actors/supervision.hpp"
#include "guest/store/catalog.hpp"
#include "guest/store/layout.hpp"
#include "messages/actors.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

namespace allox {

/// The core a front is spawned over.
struct core_handles {
  supervisor_actor supervisor;
  agents_actor agents;
  metadata_actor metadata;
  /// Tracked execution; null when disabled.
  std::shared_ptr<const exec_config> exec;
};

struct supervisor_state;

/// Spawns the native front's RPC actor as a child of `self` (linked and
/// monitored, so that it stops with the tree and its failure is seen).
using front_factory = std::function<rpc_actor(
    supervisor_actor::stateful_pointer<supervisor_state> self,
    const core_handles& core)>;

/// Spawns the other fronts (E2B, ...) as children of `self`, as above.
using more_fronts_factory = std::function<std::vector<stats_client_actor>(
    supervisor_actor::stateful_pointer<supervisor_state> self,
    const core_handles& core)>;

struct supervisor_init {
  store::layout paths;
  std::shared_ptr<store::catalog> catalog;
  /// Tracked execution; null when disabled.
  std::shared_ptr<const exec_config> exec;
  /// Called (from an actor thread) when a direct child fails.
  std::function<void(std::string)> on_fatal;
  /// The daemon's: spawns the RPC actor once the core exists.
  front_factory spawn_front;
  /// The daemon's: spawns the other fronts after the RPC actor.
  more_fronts_factory spawn_more_fronts;
};

/// A core actor or front, as the SUPERVISOR supervises it: its restart
/// budget is zero, so its failure is a give-up (fatal for the daemon).
using core_slot = supervision::child_slot<caf::actor>;

struct supervisor_state : supervision::supervisor_base {
  static inline const char* name = "supervisor";

  supervisor_init init;
  metadata_actor metadata;
  agents_actor agents;
  rpc_actor rpc;
  /// The other fronts; each stops with the tree and fails it as RPC does.
  std::vector<stats_client_actor> fronts;
  /// The TRACKER, while process tracking is "ebpf".
  tracker_actor tracker;
  /// Every child by name, in spawn order. An orderly stop tells the fronts
  /// and AGENTS (and with it every session) first, METADATA and the
  /// TRACKER once those have ended: sessions queue their last catalog
  /// writes on their way out.
  std::vector<std::pair<std::string, core_slot>> children;
  std::chrono::steady_clock::time_point started;
};

supervisor_actor::behavior_type
supervisor(supervisor_actor::stateful_pointer<supervisor_state> self,
           supervisor_init init);

} // namespace allox
