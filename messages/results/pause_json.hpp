// SPDX-License-Identifier: Apache-2.0
// The native wire's JSON of session.pause, session.resume and
// session.usage, written here once.
#pragma once

#include "messages/json.hpp"
#include "messages/results/pause.hpp"

namespace allox {

/// {agent_id, session_id, paused: true, checkpoint_id, kept_memory, runs}.
json::object to_json(const pause_result& r);
/// {agent_id, session_id, paused: false, runs}.
json::object to_json(const resume_result& r);
/// {agent_id, session_id, sampled_ns, paused, runs, processes, cpu{...},
/// memory{...}, pids_current, disk{...}}.
json::object to_json(const usage_report& u);

} // namespace allox
