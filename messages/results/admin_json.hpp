// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of audit.list ({events: [{...fields, cursor,
// timestamp_ns, op, agent_id?, session_id?}], next_cursor, has_more}),
// store.initialize ({root, recovered_sessions}) and debug.fault ({armed}),
// written here once.
#pragma once

#include "messages/json.hpp"
#include "messages/results/admin.hpp"

namespace allox {

/// One record: its own fields first, then where and what it is.
json::object to_json(const logged_audit& r);
json::object to_json(const audit_page& p);
json::object to_json(const store_initialized& r);
json::object to_json(const fault_armed& r);

/// For the daemon's log.
json::object to_json(const recovery_summary& r);

} // namespace allox
