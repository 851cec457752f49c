// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of the runtime facet's results (docs/rpc.md,
// "Runtime"), written here once.
#pragma once

#include "messages/json.hpp"
#include "messages/results/runtime.hpp"

namespace allox {

json::object to_json(const lease_granted& g);
json::object to_json(const lease_released& r);
json::object to_json(const background_registered& r);
json::object to_json(const reset_begun& r);
json::object to_json(const reset_completed& r);

/// What session.unfence cleared: {reset, leases, background_executions,
/// interrupted_runs}, also the audit record's `cleared`.
json::object cleared_json(const unfence_result& r);
json::object to_json(const unfence_result& r);

} // namespace allox
