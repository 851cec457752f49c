// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of a session (the prototype's session.describe:
// agent_id, session_id, workspace_level, the relative paths, checkpoint_ids,
// checkpoint_head), written here once.
#pragma once

#include "messages/json.hpp"
#include "messages/results/sessions.hpp"

namespace allox {

json::object to_json(const session_view& v);
json::object to_json(const session_counters& c);
json::object to_json(const session_forked& f);
json::object to_json(const session_deleted& d);
json::object to_json(const agent_deleted& d);

} // namespace allox
