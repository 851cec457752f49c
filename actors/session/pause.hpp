// SPDX-License-Identifier: Apache-2.0
// The pause facet of the SESSION actor: session.pause, session.resume and
// session.usage (pause.cpp). Internal to actors/session/.
#pragma once

#include "actors/session/facets.hpp"
#include "messages/commands/pause.hpp"

namespace allox::session_facets {

/// session.pause: freezes the session's cgroup (or stops its runs), then
/// checkpoints its files while they are held; replies with the checkpoint.
caf::result<pause_result> handle(self_ptr self, const cmd::session_pause& c);

/// session.resume: thaws the frozen group; the session takes runs again.
caf::result<resume_result> handle(self_ptr self, const cmd::session_resume& c);

/// session.usage: the session group's CPU, memory and processes, and the
/// workspace's disk use (walked on a worker thread).
caf::result<usage_report> handle(self_ptr self, const cmd::session_usage& c);

/// At start, after adoption: a group a crashed daemon left frozen with
/// adopted runs in it keeps the session paused; one without runs is
/// thawed, so the session's next runs are not born stopped.
void thaw_leftover(self_ptr self);

} // namespace allox::session_facets
