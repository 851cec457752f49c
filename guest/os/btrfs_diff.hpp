// SPDX-License-Identifier: Apache-2.0
// Differences between two Btrfs trees that share history (checkpoints of
// one session, or a checkpoint and current/), without reading what did not
// change.
//
// Both trees descend from a common ancestor snapshot taken at generation G.
// Every tree block either tree has rewritten since then has a generation
// above G; everything else is shared and identical. A TREE_SEARCH_V2 with
// min_transid = G + 1 therefore visits only rewritten blocks, and among
// their inode items only those with transid > G changed. Their paths (and
// the entries of changed directories) are the only candidates compared;
// unchanged subtrees are never opened. Cost grows with the size of the
// change, not of the tree. A writable tree (current/) is synced first: Btrfs
// keeps recent inode updates as delayed items that a search cannot see.
#pragma once

#include "messages/errors.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace allox::os {

struct tree_change {
  std::string path;   // relative to the tree root, no leading slash
  std::string change; // added, modified or deleted
  std::string type;   // file, directory, symlink or other
  /// The inode at the path in the `to` tree (0 when deleted) and in the
  /// `from` tree (0 when added): the same for a file changed in place,
  /// two for a file replaced. Checkpoints keep their tree's inode numbers.
  uint64_t ino = 0;
  uint64_t from_ino = 0;
};

struct diff_stats {
  /// "generation" or "walk".
  std::string method;
  /// Inodes found changed by the generation search (both trees).
  uint64_t changed_inodes = 0;
  /// Paths compared with lstat.
  uint64_t compared_paths = 0;
  /// Directories listed.
  uint64_t listed_dirs = 0;
};

/// Diff of two subvolumes mounted at `from` and `to` with a common
/// ancestor at `base_generation`; 0 (unknown) falls back to diff_walk.
/// Sorted by path.
expected<std::vector<tree_change>> diff_trees(const std::string& from,
                                              const std::string& to,
                                              uint64_t base_generation,
                                              diff_stats* stats = nullptr);

/// The path of a directory inode below the root of the subvolume mounted
/// at `root` ("" for the root itself), by the tree's back references.
expected<std::string> directory_path(const std::string& root, uint64_t dir_ino);

/// The same result by walking and comparing both trees completely.
expected<std::vector<tree_change>> diff_walk(const std::string& from,
                                             const std::string& to,
                                             diff_stats* stats = nullptr);

} // namespace allox::os
