// SPDX-License-Identifier: Apache-2.0
// Internal to the RPC actor (fronts/native/rpc.cpp, fronts/native/routes.cpp):
// the request bookkeeping both use and the routing table.
#pragma once

#include "fronts/native/rpc.hpp"
#include "messages/results/stats_json.hpp"

#include <caf/stateful_actor.hpp>

#include <memory>
#include <string_view>
#include <unordered_map>

namespace allox::rpc_detail {

using self_ptr = rpc_actor::stateful_pointer<rpc_state>;

/// Starts tracking a request: it is answered exactly once, through
/// `reply`, at the latest init.timeout from now. Returns its ticket.
uint64_t track(self_ptr self, reply_fn reply);

/// As track(), for a bulk transfer's step, answered typed.
uint64_t track(self_ptr self, transfer_answer answer);
uint64_t track(self_ptr self, pending_request request);

/// Answers a request (unless it was answered already).
void reply(self_ptr self, uint64_t ticket, const json::value& result);

/// As reply(), with the actor tree's stats the result was rendered from
/// (system.dump), for the metrics front's /metrics.
void reply(self_ptr self, uint64_t ticket, const json::value& result,
           std::shared_ptr<const actor_stats> stats);

/// Answers a bulk transfer's step with its session's result (unless it
/// was answered already).
void reply_transfer(self_ptr self, uint64_t ticket, transfer_begun r);
void reply_transfer(self_ptr self, uint64_t ticket, transfer_audited r);

/// Answers a request with an error (unless it was answered already).
void reply_error(self_ptr self, uint64_t ticket, const caf::error& err);

/// Answers every request past its deadline (the tick).
void expire(self_ptr self);

/// Routes one request: decode its command, send it on, answer.
using route_fn = void (*)(self_ptr, uint64_t, const json::object&);

/// Every action the daemon serves.
const std::unordered_map<std::string_view, route_fn>& routes();

/// GET /v1/stream: subscribes the stream's sink to the run's state.
void open_stream(self_ptr self, stream_request& req);

/// PUT/GET /v1/files/...: begins or ends a bulk transfer in its session.
void open_transfer(self_ptr self, transfer_request& req);

} // namespace allox::rpc_detail
