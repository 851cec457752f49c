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
// The live stream (GET /v1/stream) and bulk transfers (/v1/files/) are
// framed by the transport (guest/http/stream.cpp, transfer.cpp), which
// asks the RPC actor through the functions set here.
#pragma once

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

} // namespace allox::native
