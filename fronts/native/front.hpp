// SPDX-License-Identifier: Apache-2.0
// The native front on the HTTP server (docs/rpc.md): POST /v1/rpc is its
// route. The loop thread decodes the envelope and hands the request to the
// RPC actor with the route's responder as its reply; the RPC actor routes
// it to the owning actor and encodes the result.
//
//   loop thread                     RPC actor                  core
//   route POST /v1/rpc
//     decode_envelope --rpc_request--> routes(): decode the
//                                      command --------cmd---> SESSION,
//                                                              AGENTS ...
//   responder <-----reply(status, envelope JSON)-- encode the result
//
// PUT/GET /v1/files/ are streamed routes (files.cpp): the front plans the
// transfer from the head and answers; the transport moves the bytes
// (guest/http/transfer.cpp) and asks the RPC actor to begin and end it.
// GET /v1/stream is a live answer (stream.cpp): the front sends the head,
// subscribes to the run through the RPC actor and feeds the events from
// the run's logs on the loop thread.
#pragma once

#include "guest/http/routes.hpp"
#include "messages/actors.hpp"

#include <functional>

namespace allox::http {
class server;
}

namespace allox::native {

/// The RPC actor once the actor tree is up (null before and after).
using rpc_getter = std::function<rpc_actor()>;

/// How the live stream paces itself.
struct stream_options {
  /// A stream with nothing to send writes a comment this often.
  uint64_t heartbeat_ms = 15000;
  /// A stream reads its logs this often even without inotify news.
  uint64_t fallback_ms = 1000;
};

/// Registers the native wire on `srv` (before it listens).
void serve_native(http::server& srv, rpc_getter rpc,
                  stream_options stream = {});

/// An answer of the native wire: `body` is its JSON envelope.
http::route_response json_answer(int status, std::string body);

/// PUT/GET /v1/files/...: streamed routes planning bulk transfers
/// (files.cpp; called by serve_native).
void serve_files(http::server& srv);

/// GET /v1/stream: a live answer (stream.cpp; called by serve_native).
void serve_live_stream(http::server& srv, rpc_getter rpc, stream_options opts);

/// Hands a live stream's subscription to the RPC actor (503 without
/// one).
void subscribe(const rpc_getter& rpc, stream_request req);

} // namespace allox::native
