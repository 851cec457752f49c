// SPDX-License-Identifier: Apache-2.0
// The contract between the HTTP front end and the RPC actor.
#pragma once

#include "messages/json.hpp"
#include "messages/results/runs.hpp"
#include "messages/stats.hpp"

#include <caf/allowed_unsafe_message_type.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace allox {

/// A finished response for the request identified by `ticket`.
struct rpc_reply {
  uint64_t ticket = 0;
  int status = 200;
  std::string body;
  /// system.dump's tree as the actors reported it, typed: a /metrics
  /// scrape renders from it rather than from `body`'s JSON.
  std::shared_ptr<const actor_stats> stats;
};

/// Where the RPC actor delivers replies; implemented by the HTTP server.
/// `post` is called from actor threads and must be thread-safe.
class reply_channel {
public:
  virtual ~reply_channel() = default;
  virtual void post(rpc_reply reply) = 0;
};

/// Where a session pushes a run's updates (its row, on every state
/// change) for a live stream; implemented by the HTTP server. Called from
/// actor threads; false once the stream is gone, and the session then
/// forgets the sink.
class run_sink {
public:
  virtual ~run_sink() = default;
  virtual bool push(const run_row& row) = 0;
};

/// GET /v1/stream: the stream's parameters (agent_id, session_id, run_id)
/// and its sink; answered like an RPC request under `ticket` with
/// {row, dir} (the run's row and the directory of its logs).
struct stream_request {
  uint64_t ticket = 0;
  json::value params;
  std::shared_ptr<run_sink> sink;
};

/// PUT or GET /v1/files/{agent}/{session}/{path}: `params` are
/// {agent_id, session_id, path, upload, tar} and, with `done`, {bytes,
/// entries}; answered like an RPC request under `ticket` (begin: {root,
/// rel, path}; done: the audit was queued).
struct transfer_request {
  uint64_t ticket = 0;
  json::value params;
  bool done = false;
};

/// Encodes the envelope `{"ok":true,"result":...}` around serialized JSON.
std::string ok_body(const std::string& result_json);

/// Encodes `{"ok":false,"error":...,"code":...}`.
std::string error_body(std::string_view message, std::string_view code);

} // namespace allox

// Local only: a sink is a pointer into this process.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::stream_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::transfer_request)
