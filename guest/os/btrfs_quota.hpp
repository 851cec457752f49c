// SPDX-License-Identifier: Apache-2.0
// Btrfs quota groups: the disk share of a session's workspace.
//
// Two modes, chosen when quotas are turned on (enable_quotas):
//
// - Simple quotas (kernels from 6.7): an extent is charged to the tree
//   that wrote it, for as long as any tree references it; a snapshot is
//   charged nothing. Each session has a level-1 qgroup, its disk group,
//   holding every tree it made (its current/ and each tree a rollback
//   replaced, its checkpoints): the group counts what the session wrote
//   and still pins anywhere, checkpoints included, and its limit makes
//   writes past the share fail with EDQUOT. Snapshots join the group as
//   they are made, which simple quotas account without a rescan.
// - Full quotas (older kernels, such as Debian 12's own 6.1): each tree's
//   level-0 qgroup counts the bytes it references; the share is a limit on
//   current/'s. Putting a snapshot into a higher-level group marks full
//   accounting inconsistent until a rescan of the whole filesystem, so
//   checkpoints stay outside the share.
//
// Either way a write past the share fails whoever writes (a sandboxed
// process or the daemon's file.*).
//
// Every function but parse_disk_limit blocks in the kernel and must run
// off the actor scheduler (see actors/blocking.hpp); reads of the usage are
// sysfs reads, cheap enough for a cached describe.
#pragma once

#include "messages/errors.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace allox::os {

enum class quota_mode { off, full, simple };

/// Turns quota groups on for the Btrfs filesystem holding `path` (nothing
/// to do when they are on, whatever their mode): simple quotas when
/// `prefer_simple` and the kernel has them, full quotas otherwise, waiting
/// for the rescan that counts what is stored already. Simple quotas count
/// only what is written after, and the store then mounts only on kernels
/// that have them.
caf::error enable_quotas(const std::string& path, bool prefer_simple = false);

/// True when quota groups are on for the filesystem holding `path`.
bool quotas_enabled(const std::string& path);

/// How the filesystem holding `path` counts (off when it cannot be read).
quota_mode quotas_mode(const std::string& path);

/// Limits the bytes the subvolume at `path` references (its level-0
/// qgroup's max_rfer); nullopt removes the limit. Takes effect at once;
/// Btrfs keeps it with the qgroup, across remounts.
caf::error limit_referenced(const std::string& path,
                            std::optional<uint64_t> max_bytes);

/// True when `path` is a subvolume whose own qgroup is limited to
/// `max_bytes` (nullopt: unlimited).
bool subvolume_limited(const std::string& path,
                       std::optional<uint64_t> max_bytes);

/// limit_referenced unless the subvolume at `path` is limited so already;
/// `unsupported` when `path` is a plain directory, whose limit would fall
/// on the tree it is in (one made before the store's quotas were on).
caf::error limit_subvolume(const std::string& path,
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

// -- disk groups (simple quotas) ---------------------------------------------

/// The level-1 qgroup the subvolume at `path` belongs to (its qgroupid,
/// level in the top 16 bits), if any: read from the quota tree.
std::optional<uint64_t> disk_group(const std::string& path);

/// A new, empty level-1 qgroup on the filesystem holding the tree at
/// `path` (made from the directory holding it, as every quota ioctl here
/// is); two callers at once get two groups.
expected<uint64_t> create_disk_group(const std::string& path);

/// Puts the subvolume at `path` into `group`. Under simple quotas what it
/// wrote is counted in the group at once, with no rescan.
caf::error join_disk_group(const std::string& path, uint64_t group);

/// The disk group of the subvolume at `path` under simple quotas, made
/// and joined when it has none; nullopt under full quotas.
expected<std::optional<uint64_t>> ensure_disk_group(const std::string& path);

// -- the share, whichever the mode -------------------------------------------

/// Limits the bytes counted for the session whose tree is at `path`: the
/// limit of its disk group under simple quotas (nothing to do while it has
/// none), of its own level-0 qgroup under full quotas. nullopt removes it.
caf::error limit_share(const std::string& path,
                       std::optional<uint64_t> max_bytes);

/// What is counted for the session whose tree is at `path`: its disk
/// group under simple quotas (nullopt while it has none), its level-0
/// qgroup under full quotas.
std::optional<qgroup_usage> read_share(const std::string& path);

/// What one sweep of the store's qgroups did.
struct qgroup_sweep_result {
  /// Level-0 qgroups of deleted subvolumes removed.
  size_t trees = 0;
  /// Disk groups removed: empty at this sweep and the one before.
  size_t groups = 0;
  /// Disk groups with no tree in them now; the next sweep removes those
  /// still empty then.
  std::vector<uint64_t> empty_groups;
};

/// Removes the level-0 qgroups of deleted subvolumes that the kernel lets
/// go. Every snapshot pays for each qgroup of a deleted tree (measured on
/// 6.18: a snapshot takes 4x as long with 80 of them). This machine's 6.18
/// refuses while the qgroup still counts bytes (until the cleaner dropped
/// the tree) and then removes an empty one itself; older kernels keep the
/// qgroups of dropped trees, which this sweeps.
///
/// Then removes the disk groups (level 1) that hold no tree now and held
/// none at the previous sweep (`empty_before`, that sweep's
/// `empty_groups`): a deleted session's, or one whose maker died between
/// creating and joining it. Two sightings, because a group being made has
/// no member until its maker joins its tree to it.
expected<qgroup_sweep_result>
remove_stale_qgroups(const std::string& path,
                     const std::vector<uint64_t>& empty_before = {});

/// True when the filesystem holding `path` has the qgroup `qgroupid`: a
/// subvolume id names its level-0 qgroup, a disk group's id the group.
bool qgroup_exists(const std::string& path, uint64_t qgroupid);

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
