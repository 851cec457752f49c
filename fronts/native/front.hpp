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
// The live stream (GET /v1/stream) is still framed by the transport
// (guest/http/stream.cpp). Both reach the RPC actor through the functions
// set here.
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

/// Registers the native wire on `srv` (before it listens).
void serve_native(http::server& srv, rpc_getter rpc);

/// An answer of the native wire: `body` is its JSON envelope.
http::route_response json_answer(int status, std::string body);

/// PUT/GET /v1/files/...: streamed routes planning bulk transfers
/// (files.cpp; called by serve_native).
void serve_files(http::server& srv);

} // namespace allox::native
