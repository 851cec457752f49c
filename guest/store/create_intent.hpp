// SPDX-License-Identifier: Apache-2.0
// The intent record of a checkpoint creation: the row the new checkpoint
// will have, kept as extended attributes of checkpoints/.creating-<id> and
// written just before the snapshot is taken.
//
// Why not a catalog commit first: Btrfs takes a snapshot by committing a
// transaction, and that transaction also carries the record (xattrs are
// file system metadata, not data). So when the snapshot ioctl returns, the
// snapshot and its complete row are durable together, with no catalog
// fsync on the caller's path. The catalog row follows after the reply;
// start-up recovery turns a record whose snapshot exists into that row
// (head moved to it) and drops one whose snapshot never came to exist.
// A record whose row is durably in the catalog is stale and removed.
//
// Blocking calls: run them on a worker thread (actors/blocking.hpp).
#pragma once

#include "guest/store/layout.hpp"
#include "messages/errors.hpp"
#include "messages/records.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace allox::store {

/// Prefix of intent record files in checkpoints/. Never a valid id.
inline constexpr std::string_view creating_prefix = ".creating-";

/// Largest value written per extended attribute. Btrfs keeps name and
/// value in one tree item, so a value must fit a leaf of the smallest node
/// size (4 KiB); larger rows are split over numbered attributes.
inline constexpr size_t intent_chunk_bytes = 3072;

/// Path of the record of checkpoint `id`.
std::string intent_path(const layout& paths, const std::string& a,
                        const std::string& s, const std::string& id);

/// Writes the record of `row` (replacing a leftover of the same id).
caf::error write_create_intent(const layout& paths, const checkpoint_row& row);

/// Reads a record back; not_found when there is none, invalid_argument
/// when it is incomplete or unreadable.
expected<checkpoint_row> read_create_intent(const layout& paths,
                                            const std::string& a,
                                            const std::string& s,
                                            const std::string& id);

/// Removes a record; a missing one is fine.
caf::error clear_create_intent(const layout& paths, const std::string& a,
                               const std::string& s, const std::string& id);

/// Ids of the records present in a session's checkpoints/, sorted.
std::vector<std::string>
create_intents(const layout& paths, const std::string& a, const std::string& s);

/// The same from a listing of checkpoints/ already at hand.
std::vector<std::string> create_intents(const std::vector<std::string>& names);

/// A record to remove once the catalog holds its row durably.
struct intent_ref {
  std::string agent_id;
  std::string session_id;
  std::string checkpoint_id;
};

/// Removes every record in `refs`, going on past failures; returns the
/// first one.
caf::error clear_create_intents(const layout& paths,
                                const std::vector<intent_ref>& refs);

} // namespace allox::store
