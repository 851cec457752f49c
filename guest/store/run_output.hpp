// SPDX-License-Identifier: Apache-2.0
// Where runs keep their logs, and how a session's logs stay within its
// share of the disk.
//
//   <audit root>/sessions/<agent>/<session>/<run>/{stdout.log, stderr.log,
//                                                exit, events.jsonl}
//
// A run's stdout and stderr are files the daemon opens and hands to the
// run: nothing but the kernel stands between a program printing without
// end and the disk. On the guest's data disk the audit root is a
// subvolume beside the store, so with the store's quotas on each
// session's directory is a subvolume of its own whose qgroup is limited to
// the session's share (disk.max): such a program is stopped there with
// EDQUOT, like a run filling its workspace, instead of filling the disk
// under every session's checkpoints and the catalog. A new run of a
// session whose logs are full makes room by removing the logs of its
// finished runs, oldest first (reclaim_output; process.output then says
// `logs_removed`). Elsewhere (no quotas, or
// the audit root on another filesystem) the directories are plain ones.
// Runs from before this layout keep the directory their row names.
#pragma once

#include "messages/errors.hpp"

#include <cstdint>
#include <set>
#include <string>

namespace allox::store {

/// All run logs of one agent's sessions.
std::string agent_output_dir(const std::string& audit_root,
                             const std::string& agent);

/// The run logs of one session: each run has a directory in it.
std::string session_output_dir(const std::string& audit_root,
                               const std::string& agent,
                               const std::string& session);

/// Makes the session's directory `dir` and its parents when missing: a
/// subvolume when `subvolume` (whose own qgroup os::limit_subvolume
/// limits), else a plain directory. Made concurrently by two callers,
/// both succeed. An existing directory is left as it is.
caf::error ensure_output_dir(const std::string& dir, bool subvolume);

/// The room left under the limit of the session's logs, as of the last
/// commit; INT64_MAX when they have no limit.
int64_t output_room(const std::string& dir);

/// Removes the logs of the finished runs in `dir`, oldest first (by when
/// their directories last changed), skipping `keep` (live runs), until
/// what was removed adds up to `bytes` or nothing is left to remove; then
/// commits, so that the quota sees the room. Returns the number removed.
expected<size_t> reclaim_output(const std::string& dir,
                                const std::set<std::string>& keep,
                                int64_t bytes);

} // namespace allox::store
