// SPDX-License-Identifier: Apache-2.0
// A tracked run's process map (reference 9.5), built from the TRACKER's
// events: pure functions on JSON, so the session's tracking facet
// (tracking.cpp) and the unit tests share them.
#pragma once

#include "messages/events.hpp"
#include "messages/json.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace allox::session_facets {

/// A value or null.
json::value opt(const caf::optional<int64_t>& v);

/// Applies one event to a run's process map (`processes`, keyed by
/// process id): a fork adds the process (its parent named only when the
/// parent is the run's), an exec appends its filename and comm (a thread's
/// exec keeps the process), an exit ends it with its code or signal. The
/// root's id goes to `row.root_process_id`. A process first seen by
/// its exec or exit (its fork lost) is added then. Returns the process's
/// entry.
json::object& apply_event(json::object& processes, run_row& row,
                          const process_record& e);

/// Appends `s` to `out` as a JSON string (Boost.JSON's escaping).
void append_json_string(std::string& out, std::string_view s);

/// The fields every event line of a run ends with, rendered once per
/// batch: `,"run_id":…,"session_id":…,"agent_id":…`.
std::string event_line_ids(std::string_view run_id, std::string_view session_id,
                           std::string_view agent_id);

/// Appends one line of the run's events.jsonl (the object process.events
/// returns) and its newline to `out`: written field by field rather than
/// built as a json::object, because it runs for every event of every
/// tracked run. `ppid` is the process's parent pid (the map's, for events
/// after its fork); `ids` comes from event_line_ids.
void append_event_line(std::string& out, uint64_t seq, const process_record& e,
                       int64_t ppid, std::string_view ids);

/// The process map nested by parent: the top processes (those whose
/// parent is not the run's), each `{process_id, pid, ppid, comm,
/// filenames, exit_code, signal, alive, children}`, children in the order
/// they started.
json::array nest(const json::object& processes);

/// Every process of a run's map exited (false for an empty map).
bool all_exited(const json::object& processes);

} // namespace allox::session_facets
