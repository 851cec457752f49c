// SPDX-License-Identifier: Apache-2.0
// Btrfs quota groups: the disk share of a session's workspace.
//
// Each subvolume has a level-0 qgroup counting the bytes it references;
// a limit on it makes writes past the share fail with EDQUOT, whoever
// writes (a sandboxed process or the daemon's file.*). Only level-0
// groups are used: putting a snapshot into a higher-level group marks the
// accounting inconsistent on the guest's kernel (6.1), until a rescan of
// the whole filesystem.
//
// Every function but parse_disk_limit blocks in the kernel and must run
// off the actor scheduler (see actors/blocking.hpp); reads of the usage are
// sysfs reads, cheap enough for a cached describe.
#pragma once

#include "messages/errors.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace allox::os {

/// Turns quota groups on for the Btrfs filesystem holding `path` (nothing
/// to do when they are on) and waits for the rescan that counts what is
/// stored already.
caf::error enable_quotas(const std::string& path);

/// True when quota groups are on for the filesystem holding `path`.
bool quotas_enabled(const std::string& path);

/// Limits the bytes the subvolume at `path` references (its level-0
/// qgroup's max_rfer); nullopt removes the limit. Takes effect at once;
/// Btrfs keeps it with the qgroup, across remounts.
caf::error limit_referenced(const std::string& path,
                            std::optional<uint64_t> max_bytes);

/// What the level-0 qgroup of the subvolume at `path` counts, as of the
/// last transaction commit.
struct qgroup_usage {
  uint64_t referenced = 0;
  uint64_t exclusive = 0;
  /// The limit on `referenced`, if any.
  std::optional<uint64_t> max_referenced;
};

/// nullopt when quotas are off or the counts cannot be read.
std::optional<qgroup_usage> read_qgroup(const std::string& path);

/// Removes the level-0 qgroups of deleted subvolumes that the kernel lets
/// go, and returns how many went. Every snapshot pays for each qgroup of a
/// deleted tree (measured on 6.18: a snapshot takes 4x as long with 80 of
/// them). This machine's 6.18 refuses while the qgroup still counts bytes
/// (until the cleaner dropped the tree) and then removes an empty one
/// itself; older kernels keep the qgroups of dropped trees, which this
/// sweeps.
expected<size_t> remove_stale_qgroups(const std::string& path);

/// True when the filesystem holding `path` has a level-0 qgroup for the
/// subvolume `id`.
bool qgroup_exists(const std::string& path, uint64_t id);

/// Commits the running transaction of the filesystem holding `path` and
/// wakes its cleaner, which drops deleted subvolumes (BTRFS_IOC_SYNC).
caf::error commit_and_clean(const std::string& path);

/// Size of the filesystem holding `path`, in bytes (0 if unknown).
uint64_t filesystem_bytes(const std::string& path);

/// A disk limit: "max" (none, nullopt), a byte count with an optional
/// binary suffix (K, M, G, T), or "N%" of `total_bytes` (the store's
/// size). Refused with invalid_argument otherwise, and when it is zero.
expected<std::optional<uint64_t>> parse_disk_limit(const std::string& value,
                                                   uint64_t total_bytes);

} // namespace allox::os
