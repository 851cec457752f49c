// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of a tracked run's processes, written here once:
// the process map (a run row's `processes`, in replies and in the
// catalog's stored rows), the event log's lines (events.jsonl, which
// process.events hands out as they are) and the process tree.
#pragma once

#include "messages/errors.hpp"
#include "messages/results/processes.hpp"

#include <string>
#include <string_view>

namespace allox {

/// {process_id: {process_id, pid, ppid, parent_process_id, comm,
/// filenames, exit_code, signal, alive, root, started_ns, exited_ns}}.
json::object to_json(const process_map& m);

/// A map from its JSON (a stored row's `processes`); `invalid_argument`
/// naming the first process or key of the wrong shape.
expected<process_map> process_map_from_json(const json::object& o);

/// Appends `s` to `out` as a JSON string (Boost.JSON's escaping).
void append_json_string(std::string& out, std::string_view s);

/// The fields every event line of a run ends with, rendered once per
/// batch: `,"run_id":…,"session_id":…,"agent_id":…`.
std::string event_line_ids(std::string_view run_id, std::string_view session_id,
                           std::string_view agent_id);

/// Appends one line of a run's events.jsonl and its newline to `out`:
/// `{seq, event, pid, tid, comm, ns, process_id, kernel_seq, run_id,
/// session_id, agent_id, ppid, root?}` and the kind's own field
/// (parent_process_id, filename, or exit_code and signal). Written field
/// by field rather than built as a json::object, because it runs for every
/// event of every tracked run; `ids` comes from event_line_ids.
void append_event_line(std::string& out, uint64_t seq, const process_record& e,
                       int64_t ppid, std::string_view ids);

/// A line of events.jsonl read back, or none when it is not one (a line
/// cut by a crash).
caf::optional<logged_event> parse_event_line(std::string_view line);

/// The event as its line spells it.
json::value to_json(const logged_event& e);

/// {run_id, events, next_after, has_more, state, trace_complete}.
json::object to_json(const event_page& p);

/// {process_id, pid, ppid, comm, filenames, exit_code, signal, alive,
/// children}.
json::object to_json(const process_node& n);

/// {run_id, state, trace_complete, processes, tree}.
json::object to_json(const process_tree_view& t);

/// process.status: {enabled, backend} without execution; with it also
/// {abi, ready, error, execution_enabled, cgroup_root, audit_root,
/// isolation, cgroup_controllers, store_devices, store_quotas,
/// store_quota_mode}.
json::object to_json(const execution_status& s);

} // namespace allox
