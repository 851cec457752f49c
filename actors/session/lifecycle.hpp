// SPDX-License-Identifier: Apache-2.0
// The lifecycle facet of the SESSION actor: session.describe, debug.fault,
// session.delete and retiring (session.cpp, lifecycle.cpp). Internal to
// actors/session/.
#pragma once

#include "actors/session/facets.hpp"

namespace allox::session_facets {

// -- session.describe (session.cpp) -------------------------------------------

/// session.describe: the session's paths, checkpoint ids and head.
caf::result<session_view> handle(self_ptr self, const cmd::session_describe& c);

/// debug.fault: arms a fault point of this actor (or of the TRACKER).
caf::result<fault_armed> handle(self_ptr self, const cmd::debug_fault& c);

// -- lifecycle (lifecycle.cpp) ------------------------------------------------

/// session.delete: row marked, directory moved to trash, row removed; the
/// actor quits.
caf::result<session_deleted> handle(self_ptr self,
                                    const cmd::session_delete& c);

/// agent.delete's retirement (`retire` false: its undo); waits for the
/// baselines of forks into or out of this session.
caf::result<caf::ok_atom> handle_retire(self_ptr self, bool retire);

} // namespace allox::session_facets
