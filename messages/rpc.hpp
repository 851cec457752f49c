// SPDX-License-Identifier: Apache-2.0
// The contract between the native front (fronts/native) and the RPC
// actor: requests carry the function their reply goes to.
#pragma once

#include "messages/commands/files.hpp"
#include "messages/errors.hpp"
#include "messages/json.hpp"
#include "messages/results/files.hpp"
#include "messages/results/runs.hpp"
#include "messages/stats.hpp"

#include <caf/allowed_unsafe_message_type.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>

namespace allox {

/// A finished response to one request.
struct rpc_reply {
  int status = 200;
  std::string body;
  /// system.dump's tree as the actors reported it, typed: a /metrics
  /// scrape renders from it rather than from `body`'s JSON.
  std::shared_ptr<const actor_stats> stats;
};

/// Where one request's reply goes: called at most once, from an actor
/// thread; the front that made the request carries it to its client.
using reply_fn = std::function<void(rpc_reply)>;

/// One request of the native wire, its envelope decoded, and where its
/// reply goes.
struct rpc_request {
  std::string action;
  json::value params;
  reply_fn reply;
};

/// Where a session pushes a run's updates (its row, on every state
/// change) for a live stream; implemented by the native front
/// (fronts/native/stream.cpp). Called from actor threads; false once the
/// stream is gone, and the session then forgets the sink.
class run_sink {
public:
  virtual ~run_sink() = default;
  virtual bool push(const run_row& row) = 0;
};

/// GET /v1/stream: the stream's parameters (agent_id, session_id, run_id)
/// and its sink; answered like an RPC request with {row, dir} (the run's
/// row and the directory of its logs).
struct stream_request {
  json::value params;
  std::shared_ptr<run_sink> sink;
  reply_fn reply;
};

/// Where a bulk transfer's step is answered, typed: the transport moves
/// the bytes by these, never by a front's envelope. Each is called at
/// most once, from an actor thread; only the one of the step's kind.
struct transfer_answer {
  /// The begin's: where the bytes go (or why they do not).
  std::function<void(expected<transfer_begun>)> begun;
  /// The end's: the audit was queued (or why not).
  std::function<void(expected<transfer_audited>)> audited;
};

/// A bulk transfer (PUT or GET of a session's files, as a front planned
/// it) begins or ends in its session.
struct transfer_request {
  std::variant<cmd::file_transfer_begin, cmd::file_transfer_end> step;
  transfer_answer answer;
};

/// Encodes the envelope `{"ok":true,"result":...}` around serialized JSON.
std::string ok_body(const std::string& result_json);

/// Encodes `{"ok":false,"error":...,"code":...}`.
std::string error_body(std::string_view message, std::string_view code);

} // namespace allox

// Local only: a reply is a function, a sink a pointer into this process.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::rpc_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::stream_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::transfer_request)
