// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of checkpoint records (the prototype's record:
// checkpoint_id, created_at_ns, origin, message, pinned, metadata, missing,
// parent_id, child_ids), written here once.
#pragma once

#include "messages/json.hpp"
#include "messages/results/checkpoints.hpp"

namespace allox {

json::object to_json(const checkpoint_record& r);
json::object to_json(const checkpoint_view& v);
json::object to_json(const checkpoint_page& p);
/// {agent_id, session_id, checkpoint_id, parent_id, metadata}.
json::object to_json(const checkpoint_created& c);
/// {agent_id, session_id, checkpoint_id, deleted: true}.
json::object to_json(const checkpoint_deleted& d);
/// {agent_id, session_id, from, to, base_checkpoint, changes, counts,
/// next_cursor, has_more, method, stats}.
/// One writer of a change: a run's process ({kind: "run", ...}) or the
/// daemon serving a request ({kind: "daemon", action, origin, ops}).
json::object to_json(const change_writer& w);
json::object to_json(const diff_page& p);
/// {agent_id, session_id, path, history: [{checkpoint_id, parent_id,
/// created_at, change, type, writers, unattributed}], next_cursor,
/// has_more}.
json::object to_json(const history_page& p);
/// {agent_id, session_id, checkpoint_id, relative_workspace,
/// removed_runtime_entries, terminated_process_runs?,
/// pre_rollback_checkpoint_id?, pre_rollback_error?}.
json::object to_json(const rollback_result& r);

} // namespace allox
