// SPDX-License-Identifier: Apache-2.0
// The client side of the in-guest event endpoint
// (guest/http/event_endpoint.hpp), shared by the tools bound into every
// run (allox-turn, allox-share): one request line out, one reply line
// back. Links nothing of the daemon, only Boost.JSON.
#pragma once

#include <boost/json.hpp>

#include <optional>
#include <string>

namespace allox::tools {

/// Sends {"action", "params"} to $ALLOX_EVENTS_SOCKET (default
/// /run/allox/events.sock) and reads the reply line: the reply's envelope
/// ({"ok": true, "result"} or {"ok": false, "error", "code"}). Nothing
/// when the endpoint cannot be reached or gave no reply; why is then
/// printed to stderr after "`tool`: ".
std::optional<boost::json::object>
endpoint_request(const char* tool, const std::string& action,
                 const boost::json::object& params);

} // namespace allox::tools
