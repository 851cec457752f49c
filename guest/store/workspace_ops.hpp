// SPDX-License-Identifier: Apache-2.0
// The filesystem steps of checkpoint and rollback operations, shared by the
// SESSION actor (live operations) and start-up recovery. Each step is one
// blocking call meant for a worker thread; durability comes from fsyncing
// the session directory after every rename.
#pragma once

#include "guest/store/layout.hpp"
#include "messages/errors.hpp"
#include "messages/records.hpp"

#include <string>
#include <vector>

namespace allox::store {

/// Prefixes of the transient subvolumes of a rollback (prototype names).
inline constexpr std::string_view restore_prefix = ".restore-";
inline constexpr std::string_view discard_prefix = ".discard-";

/// Fails unless the session's current/ and checkpoints/ are managed
/// directories and checkpoints/<id> is free (a snapshot of that name made
/// outside the daemon keeps its name).
caf::error check_new_checkpoint(const layout& paths, const std::string& a,
                                const std::string& s, const std::string& id);

/// Read-only snapshot of current/ at checkpoints/<id> (checked with
/// check_new_checkpoint first); returns the Btrfs
/// generation at which it was taken. The snapshot is durable when this
/// returns (Btrfs commits a transaction to make it), and so is everything
/// the file system recorded before, such as the intent record
/// (guest/store/create_intent.hpp).
expected<int64_t> snapshot_current(const layout& paths, const std::string& a,
                                   const std::string& s, const std::string& id);

/// The same of another tree of the session directory (`name`, such as
/// the .discard- a rollback replaced): a snapshot, so no data is copied.
expected<int64_t> snapshot_entry(const layout& paths, const std::string& a,
                                 const std::string& s, const std::string& name,
                                 const std::string& id);

/// A fork's new session directory with its mark (fork_pending_name),
/// its checkpoints/ and the intent record of its baseline `row`
/// (guest/store/create_intent.hpp), before any snapshot. Refused with
/// already_exists when the directory exists: whatever is there is not this
/// fork's (start-up removes a crashed fork's leftovers, a failed one removes
/// its own).
caf::error prepare_fork(const layout& paths, const checkpoint_row& row);

/// A fork's new current/: a writable snapshot of the read-only `checkpoint`
/// at <session_dir>/current, durable when this returns (its transaction
/// commit). The baseline, a read-only snapshot of the same checkpoint, is
/// taken after (each snapshot ends in its own transaction commit, even two
/// taken at once); start-up recovery takes it from the checkpoint when a
/// crash came first
/// (guest/store/fork_recovery.hpp).
caf::error make_fork_current(const std::string& checkpoint,
                             const std::string& session_dir);

/// A fork's baseline exists: its mark goes (not synced: start-up recovery
/// removes a mark it finds beside the baseline).
void settle_fork(const std::string& session_dir);

/// Renames <session_dir>/.fork-current, where forks of earlier releases
/// staged their current/, to current/ (start-up recovery).
caf::error finish_fork(const std::string& session_dir);

/// Moves `dir` (missing is fine) into the trash of `parent` and purges
/// it: a crash halfway leaves a trash entry, which start-up purges, never
/// half a directory under its own name.
caf::error remove_via_trash(const std::string& dir, const std::string& parent);

/// Deletes checkpoints/<id> (missing is fine).
caf::error delete_checkpoint(const layout& paths, const std::string& a,
                             const std::string& s, const std::string& id);

/// Writable snapshot of checkpoints/<id> at <session>/<restore_name>.
caf::error make_restore(const layout& paths, const std::string& a,
                        const std::string& s, const std::string& id,
                        const std::string& restore_name);

/// Renames <session>/<from> to <session>/<to>; with `durable`, fsyncs the
/// session directory too (needed only before a step that would otherwise
/// lose track of the rename after a power cut).
caf::error rename_in_session(const layout& paths, const std::string& a,
                             const std::string& s, const std::string& from,
                             const std::string& to, bool durable = true);

/// Deletes <session>/<name> if it exists (subvolume or not).
caf::error remove_in_session(const layout& paths, const std::string& a,
                             const std::string& s, const std::string& name);

/// True when <session>/<name> exists.
bool exists_in_session(const layout& paths, const std::string& a,
                       const std::string& s, const std::string& name);

/// Unlinks every socket and FIFO below <workspace>/.allox-tmp; returns their
/// paths relative to .allox-tmp, sorted.
expected<std::vector<std::string>> scrub_runtime(const std::string& workspace);

/// Btrfs generation at which a snapshot was taken (0 if not a subvolume).
int64_t snapshot_generation(const std::string& path);

/// Names in the session directory starting with `prefix`.
std::vector<std::string> session_entries(const layout& paths,
                                         const std::string& a,
                                         const std::string& s,
                                         std::string_view prefix);

} // namespace allox::store
