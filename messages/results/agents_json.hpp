// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of the agent actions' results (docs/rpc.md,
// "Agents"), written here once.
#pragma once

#include "messages/json.hpp"
#include "messages/results/agents.hpp"

namespace allox {

json::object to_json(const agent_view& v);
json::object to_json(const agent_ids& v);
json::object to_json(const session_ids& v);

} // namespace allox
