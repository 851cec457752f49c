// The filesystem steps of checkpoint and rollback operations, shared by the
// SESSION actor (live operations) and start-up recovery. Each step is one
// blocking call meant for a worker thread; durability comes from fsyncing
// the session directory after every rename.
#pragma once

#include "guest/store/layout.hpp"
#include "messages/errors.hpp"

#include <string>
#include <vector>

namespace allox::store {

/// Prefixes of the transient subvolumes of a rollback (prototype names).
inline constexpr std::string_view restore_prefix = ".restore-";
inline constexpr std::string_view discard_prefix = ".discard-";

/// Prefix of a checkpoint snapshot whose row is not committed yet. Never a
/// valid id, so never adopted: start-up deletes it without a row and
/// publishes it (renames it to its id) with one.
inline constexpr std::string_view pending_prefix = ".pending-";

/// Read-only snapshot of current/ at checkpoints/.pending-<id>; returns the
/// Btrfs generation at which it was taken. A half-made snapshot is removed.
expected<int64_t> snapshot_current(const layout& paths, const std::string& a,
                                   const std::string& s, const std::string& id);

/// Renames checkpoints/.pending-<id> to checkpoints/<id>.
caf::error publish_checkpoint(const layout& paths, const std::string& a,
                              const std::string& s, const std::string& id);

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
