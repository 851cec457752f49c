// SPDX-License-Identifier: Apache-2.0
// The runtime facet of the SESSION actor: execution leases, background
// executions and runtime resets (runtime.cpp). Internal to actors/session/.
#pragma once

#include "actors/session/facets.hpp"

namespace allox::session_facets {

// -- runtime: leases, background executions, reset (runtime.cpp) --------------

/// execution.acquire: the session's one execution lease.
caf::result<lease_granted> handle(self_ptr self,
                                  const cmd::execution_acquire& c);

/// execution.release: gives a lease back.
caf::result<lease_released> handle(self_ptr self,
                                   const cmd::execution_release& c);

/// runtime.register_background: notes an outside launcher's execution.
caf::result<background_registered>
handle(self_ptr self, const cmd::runtime_register_background& c);

/// runtime.begin_reset: fences the session for a runtime reset (killing the
/// active run first with kill_processes).
caf::result<reset_begun> handle(self_ptr self,
                                const cmd::runtime_begin_reset& c);

/// runtime.complete_reset: lifts the reset fence.
caf::result<reset_completed> handle(self_ptr self,
                                    const cmd::runtime_complete_reset& c);

/// session.unfence: forgets the reset, leases, background registrations and
/// interrupted runs, with an audit record.
caf::result<unfence_result> handle(self_ptr self,
                                   const cmd::session_unfence& c);

} // namespace allox::session_facets
