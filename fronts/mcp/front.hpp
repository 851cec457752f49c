// SPDX-License-Identifier: Apache-2.0
// The MCP front (docs/mcp.md): a Model Context Protocol server on the
// daemon's listener (POST /mcp, the Streamable HTTP transport, stateless),
// whose tools are the core's session, command, file and checkpoint
// commands. The HTTP loop hands each request whole to the MCP actor, which
// decodes JSON-RPC, maps a tool's arguments onto the core's commands
// (decoded by the core's own decoders), calls the session or AGENTS, and
// encodes the typed results as the tool's structured content.
//
//   loop thread          MCP actor                         core
//   route /mcp ---mcp_call---> HTTP checks (origin, version)
//                              JSON-RPC decode
//                              initialize, ping, tools/list: answered here
//                              tools/call ----cmd---------> SESSION / AGENTS
//   responder <---JSON------- result (structuredContent)   (audited "mcp")
//   responder <---SSE events- progress while command_run waits, then the
//                              result, when the call has a progress token
#pragma once

#include "fronts/session_calls.hpp"
#include "guest/http/routes.hpp"
#include "messages/actors.hpp"

#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace allox::http {
class server;
}

namespace allox::mcp {

/// A request for the front, as the loop thread received it.
struct mcp_call {
  http::route_request request;
  http::responder answer;
};

/// The MCP actor.
using mcp_actor = caf::typed_actor<
    // Serves one POST /mcp.
    caf::reacts_to<mcp_call>>::extend_with<stats_client_actor>;

struct front_init {
  agents_actor agents;
  /// Where each tool call's audit record goes.
  metadata_actor metadata;
  /// The daemon runs processes (tracked execution); else the command
  /// tools answer unsupported.
  bool execution = false;
  /// The daemon's --kill-session-processes-on-rollback.
  bool kill_on_rollback = false;
  /// The agent of sessions named without one.
  std::string default_agent = "mcp";
};

struct front_state {
  static inline const char* name = "mcp";

  front_init init;
  fronts::session_cache sessions;
  uint64_t requests = 0;
  uint64_t tool_calls = 0;
  uint64_t tool_errors = 0;
  uint64_t protocol_errors = 0;
  /// Tool calls still waiting for the core.
  uint64_t pending = 0;
  std::chrono::steady_clock::time_point started;
};

using front_self = mcp_actor::stateful_pointer<front_state>;

mcp_actor::behavior_type front(front_self self, front_init init);

/// Registers /mcp on `srv` (before it listens; the actor is spawned with
/// the tree, later): POST goes to what `get` returns (503 while that is
/// null), under the daemon's token rule; GET and DELETE answer 405, as a
/// server without a stream of its own and without protocol sessions.
void serve_mcp(http::server& srv, std::function<mcp_actor()> get);

} // namespace allox::mcp

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::mcp::mcp_call)
