// SPDX-License-Identifier: Apache-2.0
// The checkpoints facet of the SESSION actor: checkpoints, rollback and forks
// into new sessions (checkpoints.cpp, rollback.cpp). Internal to
// actors/session/.
#pragma once

#include "actors/session/facets.hpp"

namespace allox::session_facets {

// -- checkpoints (checkpoints.cpp) --------------------------------------------

/// checkpoint.list: every checkpoint's record, or a page of them.
caf::result<checkpoint_page> handle(self_ptr self,
                                    const cmd::checkpoint_list& c);

/// checkpoint.describe: one checkpoint's record.
caf::result<checkpoint_view> handle(self_ptr self,
                                    const cmd::checkpoint_describe& c);

/// checkpoint.diff: paths changed between two checkpoints, or between a
/// checkpoint and current/, a page at a time.
caf::result<diff_page> handle(self_ptr self, const cmd::checkpoint_diff& c);

/// Creates a checkpoint (guards, intent record and snapshot on the lane,
/// then the catalog row after `answer`): checkpoint.create's path, also
/// taken by the automatic checkpoints (policy.cpp).
void create_checkpoint(self_ptr self, const params::checkpoint_create& req,
                       std::function<void(expected<checkpoint_row>)> answer);

/// Writes the row of a checkpoint whose snapshot (and intent record) is
/// durable, and the head with it when `as_head`; audited as
/// checkpoint.create; with the interval's write set when one was sealed.
/// `committed` runs once the commit is done (or failed, fencing).
void settle_checkpoint(self_ptr self, const checkpoint_row& row,
                       std::shared_ptr<fault_set> faults, bool as_head,
                       caf::optional<write_set_row> writes = caf::none,
                       std::function<void()> committed = {});

/// The kind of an OS diff entry's change ("added", "deleted", else
/// modified).
path_change_kind change_kind_of(const std::string& change);

/// file.history: the checkpoints on the head's line that changed a path,
/// with their writers (history.cpp).
caf::result<history_page> handle(self_ptr self, const cmd::file_history& c);

/// checkpoint.create: intent record and snapshot on the lane, the reply,
/// then the catalog row.
caf::result<checkpoint_created> handle(self_ptr self,
                                       const cmd::checkpoint_create& c);

/// checkpoint.delete: journal, snapshot deleted on the lane, one commit.
caf::result<checkpoint_deleted> handle(self_ptr self,
                                       const cmd::checkpoint_delete& c);

/// session.fork, the source's part: a writable snapshot of a checkpoint
/// into the new session's current/, on this session's lane.
caf::result<fork_current_made> handle(self_ptr self,
                                      const cmd::session_fork_into& c);

// -- rollback (rollback.cpp) --------------------------------------------------

/// session.rollback, and session.rollback_after_runtime_reset when
/// `after_reset`; with kill_processes the active run is killed first.
caf::result<rollback_result> handle(self_ptr self,
                                    const cmd::session_rollback& c);

/// Deletes the trees replaced by rollbacks (deferred work).
void purge_discards(self_ptr self);

} // namespace allox::session_facets
