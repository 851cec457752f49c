// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of network.status (docs/rpc.md, "network.status"),
// written here once.
#pragma once

#include "messages/json.hpp"
#include "messages/results/network.hpp"

namespace allox {

json::object to_json(const egress_lists& e);
json::object to_json(const network_status_view& v);

} // namespace allox
