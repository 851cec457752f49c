// SPDX-License-Identifier: Apache-2.0
// The typed results of session.describe and session.create (and the
// session part of session.fork): a session's ids, its paths relative to
// the store root and its checkpoint ids; and of session.delete and
// agent.delete. Their native JSON is written once, in
// messages/results/sessions_json.hpp.
#pragma once

#include "messages/results/settings.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

#include <string>
#include <vector>

namespace allox {

/// What a session's cgroup has counted so far: its own control files only,
/// no walk of the groups below or of the workspace (session.usage measures
/// those). A count is none where its controller does not reach the group.
struct session_counters {
  /// CPU time of every process the session has run, microseconds.
  int64_t cpu_usage_usec = 0;
  caf::optional<int64_t> memory_bytes;
  caf::optional<int64_t> memory_peak_bytes;
  caf::optional<int64_t> pids_current;
  /// Processes an OOM killer chose in the session.
  caf::optional<int64_t> oom_kills;
  /// Forks refused because the session was at its pids.max.
  caf::optional<int64_t> pids_refused;
  /// Bytes the workspace (current/) references, as the store's quota
  /// counts them for disk.max; none while the store's quotas are off.
  caf::optional<int64_t> disk_bytes;
};

/// A session as callers see it.
struct session_view {
  std::string agent_id;
  std::string session_id;
  /// Paths relative to the store root (guest/store/layout.hpp).
  std::string relative_agent_workspace;
  std::string relative_agent_shared;
  std::string relative_session_workspace;
  /// The session's current/: the tree its runs and file.* see.
  std::string relative_workspace;
  /// Present checkpoints, in creation order.
  std::vector<std::string> checkpoint_ids;
  caf::optional<std::string> checkpoint_head;
  /// session.describe on a daemon that runs commands: the cgroup limits
  /// the session's next run gets (the daemon's defaults under its own).
  caf::optional<limit_list> limits;
  /// session.describe on a daemon that runs commands: what the session's
  /// runs have used.
  caf::optional<session_counters> usage;
};

/// session.fork: the new session, and the checkpoint of the source it was
/// made from.
struct session_forked {
  session_view session;
  std::string source_session_id;
  std::string checkpoint_id;
};

/// The source's part of session.fork (never on the wire): the new
/// session's current/ is made from `checkpoint_id` (the id resolved).
struct fork_current_made {
  std::string checkpoint_id;
};

/// session.delete: the session is gone, its row and its directory.
struct session_deleted {
  std::string agent_id;
  std::string session_id;
};

/// agent.delete: the agent is gone with every session of it.
struct agent_deleted {
  std::string agent_id;
};

} // namespace allox

// Local messages only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::session_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::session_forked)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::fork_current_made)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::session_deleted)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::agent_deleted)
