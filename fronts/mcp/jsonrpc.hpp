// SPDX-License-Identifier: Apache-2.0
// JSON-RPC 2.0 as MCP uses it (docs/mcp.md): requests, notifications and
// the client's responses, decoded from a body; results, errors and
// notifications encoded. Pure functions, unit-tested on their own.
#pragma once

#include "messages/json.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace allox::mcp {

/// JSON-RPC's error codes (the protocol's, not a tool's).
namespace code {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
} // namespace code

/// A protocol error to answer.
struct rpc_error {
  int code = code::internal_error;
  std::string message;
};

/// One message of a body.
struct message {
  /// The request's id (a string or a number); null for a notification.
  json::value id;
  /// A request (it has an id and wants an answer).
  bool request = false;
  /// A response to a request of ours: ignored (this server sends none).
  bool response = false;
  std::string method;
  json::object params;
  /// Set when the message is not valid JSON-RPC: the error to answer
  /// (with `id` when it could be read).
  bool failed = false;
  rpc_error error;
};

/// The messages of a body: one object, or a batch (an array, as
/// 2025-03-26 allows). A body that is not JSON, or an empty batch, is one
/// failed message.
std::vector<message> decode_body(std::string_view body, bool& batch);

/// Decodes one message.
message decode(const json::value& v);

/// {jsonrpc, id, result}.
json::object success(const json::value& id, json::value value);

/// {jsonrpc, id, error: {code, message}}.
json::object error(const json::value& id, const rpc_error& e);

/// {jsonrpc, method, params}: a notification of ours.
json::object notification(std::string_view method, json::object params);

/// The protocol versions this server speaks, newest first.
const std::vector<std::string_view>& protocol_versions();

/// The version to answer an initialize that asked for `asked`: the same if
/// it is one of ours, else our newest (the client then decides).
std::string negotiate(std::string_view asked);

/// True when `v` is one of our versions.
bool supported(std::string_view v);

} // namespace allox::mcp
