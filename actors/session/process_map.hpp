// SPDX-License-Identifier: Apache-2.0
// A tracked run's process map (reference 9.5), built from the TRACKER's
// events: pure functions on the typed map, so the session's tracking facet
// (tracking.cpp) and the unit tests share them. The map's and the event
// log's JSON are written in messages/results/processes_json.hpp.
#pragma once

#include "messages/events.hpp"
#include "messages/results/runs.hpp"

#include <vector>

namespace allox::session_facets {

/// Applies one event to a run's process map: a fork adds the process (its
/// parent named only when the parent is the run's), an exec appends its
/// filename and comm (a thread's exec keeps the process), an exit ends it
/// with its code or signal. The root's id goes to `row.root_process_id`.
/// A process first seen by its exec or exit (its fork lost) is added then.
/// Returns the process's entry.
process_entry& apply_event(process_map& processes, run_row& row,
                           const process_record& e);

/// The process map nested by parent: the top processes (those whose
/// parent is not the run's), children in the order they started.
std::vector<process_node> nest(const process_map& processes);

/// Every process of a run's map exited (false for an empty map).
bool all_exited(const process_map& processes);

} // namespace allox::session_facets
