// SPDX-License-Identifier: Apache-2.0
// The daemon once its store is open: the libuv loop, the HTTP server, the
// actor system and the actor tree, owned by one object. Its members are
// declared in the order they start, so they are destroyed in the reverse
// order: the actors go before the server they post replies to, the server
// before its loop, the catalog and the connect guard last.
//
// One shutdown path, stop(), for a start that failed and a signal alike:
//
//   RPC handle dropped -> user_shutdown to SUPERVISOR (it stops its
//   children in order, docs/architecture.md "Shutdown") -> every actor
//   done -> every loop handle closed (server, event endpoint, signals,
//   timers) -> the loop runs its close callbacks -> loop closed
#pragma once

#include "actors/supervisor.hpp"
#include "daemon/destinations.hpp"
#include "daemon/options.hpp"
#include "daemon/qgroup_sweep.hpp"
#include "fronts/e2b/front.hpp"
#include "fronts/mcp/front.hpp"
#include "fronts/native/rpc.hpp"
#include "guest/http/event_endpoint.hpp"
#include "guest/http/server.hpp"
#include "guest/store/catalog.hpp"
#include "guest/store/layout.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <uv.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace allox::daemon {

/// What start-up opened before the loop and the actors (daemon/main.cpp).
struct store_setup {
  store::layout paths;
  /// Tracked execution; null when disabled.
  std::shared_ptr<const exec_config> exec;
  /// The connect guard, attached with tracked execution.
  guard_handle guard;
  /// Handed to METADATA, which then owns it alone.
  std::shared_ptr<store::catalog> catalog;
};

/// State of the loop thread's shutdown sequence.
struct loop_context {
  http::server* server = nullptr;
  /// The in-guest event endpoint, with tracked execution.
  http::event_endpoint* endpoint = nullptr;
  rpc_actor rpc;
  uv_signal_t sigint{}, sigterm{}, sigusr1{};
  uv_timer_t drain{};
  uv_async_t fatal{};
  /// With the store's quotas on.
  qgroup_sweep* sweep = nullptr;
  std::chrono::steady_clock::time_point drain_deadline;
  std::chrono::milliseconds grace{10000};
  bool stopping = false;
  int exit_code = 0;
};

class runtime {
public:
  /// Starts the loop, the server (not yet listening) and the actor system;
  /// nothing is spawned yet. `loop_device` is what system.dump names.
  runtime(const options& opts, http::server_options sopts, store_setup setup,
          const std::string& loop_device);
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;
  ~runtime();

  /// Spawns the actor tree, recovers the store (every agent and session
  /// spawned before serving), then listens; an error when the daemon
  /// cannot serve.
  caf::error start();

  /// Serves until SIGINT, SIGTERM or a core actor's failure, then stops;
  /// the exit code.
  int serve();

  /// The one shutdown path (above); a second call does nothing.
  void stop();

  /// After stop(): runs were left running (--live-restore), so the store
  /// must stay mounted for the next daemon, which adopts both.
  bool left_runs() const { return left_runs_; }

private:
  /// Initialised first, so that every handle below has its loop.
  struct uv_loop {
    uv_loop_t uv{};
    uv_loop() { uv_loop_init(&uv); }
  };

  /// Reconciles and spawns every agent and session; on the main thread,
  /// with a scoped actor that is gone before the loop runs.
  caf::error recover();

  bool left_runs_ = false;
  const options& opts_;
  store_setup setup_;
  json::object info_;
  /// The host the server listens on, for the log.
  std::string host_;
  uv_loop loop_;
  loop_context ctx_;
  /// Its timer is a handle of loop_, closed with the others.
  std::optional<qgroup_sweep> sweep_;
  /// Declared before the actor system so it outlives every actor that may
  /// still post a reply.
  http::server server_;
  caf::actor_system_config cfg_;
  caf::actor_system system_;
  /// Held until every actor is done: an actor nobody references any more
  /// would be killed as unreachable, cutting the supervisor's order short.
  supervisor_actor sup_;
  /// The E2B front (with --e2b on), set while the tree is spawned, before
  /// the loop runs; its routes read it on the loop.
  e2b::e2b_actor e2b_;
  /// The MCP front (with --mcp on), likewise.
  mcp::mcp_actor mcp_;
  /// Runs reach the daemon through it only (guest/http/event_endpoint.hpp).
  std::optional<http::event_endpoint> endpoint_;
  bool stopped_ = false;
};

} // namespace allox::daemon
