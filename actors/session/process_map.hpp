// A tracked run's process map (reference 9.5), built from the TRACKER's
// events: pure functions on JSON, so the session's tracking facet
// (tracking.cpp) and the unit tests share them.
#pragma once

#include "messages/events.hpp"
#include "messages/json.hpp"

#include <cstdint>

namespace allox::session_facets {

/// A value or null.
json::value opt(const caf::optional<int64_t>& v);

/// Applies one event to a run's process map (`processes`, keyed by
/// process id): a fork adds the process (its parent named only when the
/// parent is the run's), an exec appends its filename and comm (a thread's
/// exec keeps the process), an exit ends it with its code or signal. The
/// root's id goes to `row["root_process_id"]`. A process first seen by
/// its exec or exit (its fork lost) is added then.
void apply_event(json::object& processes, json::object& row,
                 const process_record& e);

/// The process map nested by parent: the top processes (those whose
/// parent is not the run's), each `{process_id, pid, ppid, comm,
/// filenames, exit_code, signal, alive, children}`, children in the order
/// they started.
json::array nest(const json::object& processes);

/// Every process of the row's map exited (false for an empty map).
bool all_exited(const json::object& row);

} // namespace allox::session_facets
