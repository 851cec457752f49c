// SPDX-License-Identifier: Apache-2.0
// Btrfs subvolumes through libbtrfsutil (ioctls, no `btrfs` processes).
//
// Every function blocks in the kernel and must run off the actor scheduler
// (see actors/blocking.hpp).
#pragma once

#include "messages/errors.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace allox::os {

/// Name of the filesystem type holding `path` ("btrfs", "ext4", ...), from
/// mountinfo; falls back to the statfs magic number in hex.
expected<std::string> filesystem_type(const std::string& path);

/// Succeeds when `path` exists and lives on Btrfs; otherwise the error names
/// the filesystem found.
caf::error require_btrfs(const std::string& path);

/// Creates a new, empty subvolume at `path`.
caf::error create_subvolume(const std::string& path);

/// Snapshots the subvolume `source` at `target`, optionally read-only;
/// with `group`, the snapshot's qgroup joins that higher-level qgroup as
/// it is made (guest/os/btrfs_quota.hpp, simple quotas).
caf::error create_snapshot(const std::string& source, const std::string& target,
                           bool read_only,
                           std::optional<uint64_t> group = std::nullopt);

/// Deletes the subvolume at `path` and any subvolumes nested inside it.
/// Returns without waiting for the cleaner to reclaim space.
caf::error delete_subvolume(const std::string& path);

/// The generation of the subvolume at `path` (the last transaction that
/// changed it), after committing the running transaction: a write not yet
/// committed does not count until then. Right after a snapshot it equals
/// the snapshot's generation, until something in the subvolume changes.
expected<uint64_t> committed_generation(const std::string& path);

/// The id of the subvolume (Btrfs tree) `path` is in: what the kernel
/// names files by in write records (bpf/process.h).
expected<uint64_t> subvolume_id(const std::string& path);

/// True when `path` is the root of a subvolume.
bool is_subvolume(const std::string& path);

/// True when `a` and `b` are on the same Btrfs filesystem (perhaps in
/// different subvolumes, mounted apart).
bool same_btrfs(const std::string& a, const std::string& b);

/// The block devices of the Btrfs filesystem holding `path`, as the
/// "MAJ:MIN" that io.max and io.weight name (BTRFS_IOC_DEV_INFO); empty
/// when they cannot be read.
std::vector<std::string> block_devices(const std::string& path);

/// Removes `path` recursively, deleting subvolumes with the ioctl and
/// everything else with unlink/rmdir. Missing paths are fine.
caf::error remove_tree(const std::string& path);

} // namespace allox::os
