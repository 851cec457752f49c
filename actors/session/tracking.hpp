// SPDX-License-Identifier: Apache-2.0
// The tracking facet of the SESSION actor: what the TRACKER reports about the
// session's runs (tracking.cpp). Internal to actors/session/.
#pragma once

#include "actors/session/facets.hpp"

namespace allox::session_facets {

// -- process tracking (tracking.cpp) ------------------------------------------

/// Whether this session's runs are tracked (the daemon runs a TRACKER).
bool tracking_on(self_ptr self);

/// A new run cookie: non-zero, unique in the daemon.
uint64_t new_cookie();

/// A batch of process events of this session's runs: each run's process
/// map grows, the events are appended to its events.jsonl in one write.
void on_event_batch(self_ptr self, const process_event_batch& b);

/// The TRACKER cannot vouch for these runs' traces: live ones are killed
/// (stop reason provider_failure); each fails and fences the session.
void on_tracking_failure(self_ptr self, const tracking_failure& f);

/// Drains a tracked run at the TRACKER (its cgroup is empty), then sets
/// `events_lost` and `trace_complete` and calls `then`; an untracked run
/// goes straight to `then`.
void drain_run(self_ptr self, const std::string& id,
               std::function<void()> then);

/// process.events: a page of a run's events from its events.jsonl.
caf::result<event_page> handle(self_ptr self, const cmd::process_events& c);

/// process.tree: the run's process tree, nested from its root.
caf::result<process_tree_view> handle(self_ptr self,
                                      const cmd::process_tree& c);

} // namespace allox::session_facets
