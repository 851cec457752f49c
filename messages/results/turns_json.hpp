// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of the turns facet's results (docs/rpc.md,
// "Turns"), written here once.
#pragma once

#include "messages/json.hpp"
#include "messages/results/turns.hpp"

namespace allox {

json::object to_json(const auto_checkpoint_result& r);
json::object to_json(const turn_result& r);
json::object to_json(const turn_status_view& s);

} // namespace allox
