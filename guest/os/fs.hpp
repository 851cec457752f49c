// SPDX-License-Identifier: Apache-2.0
// Small filesystem helpers with the store's safety rules: entries the
// daemon manages must be real directories, never symlinks.
#pragma once

#include "messages/errors.hpp"

#include <string>
#include <vector>

namespace allox::os {

enum class entry_kind { missing, directory, symlink, other };

/// What `path` is, without following a final symlink.
entry_kind kind_of(const std::string& path);

/// Fails unless `path` is a real directory: "<label> is not a managed
/// directory: <path>" (invalid_argument), or not_found when missing.
caf::error require_managed_dir(const std::string& path,
                               const std::string& label);

/// Creates `path` with `mode` if missing; an existing symlink or
/// non-directory is refused like require_managed_dir.
caf::error ensure_managed_dir(const std::string& path, unsigned mode,
                              const std::string& label);

/// mkdir -p with mode 0755: every missing component of `path`.
caf::error make_dirs(const std::string& path);

/// fsync(2) on a directory, so renames and creations inside it are durable.
caf::error fsync_dir(const std::string& path);

/// Names of the entries of a directory (no "." and ".."), sorted.
expected<std::vector<std::string>> list_dir(const std::string& path);

/// rename(2) with an error value.
caf::error rename_path(const std::string& from, const std::string& to);

/// Wall-clock time in nanoseconds since the epoch.
int64_t now_ns();

/// Bytes allocated to the files of the tree at `path` (st_blocks; links
/// not followed, other file systems not entered). Shared extents of
/// snapshots count in full, as du counts them.
int64_t allocated_bytes(const std::string& path);

/// Size and free space of the file system holding `path` (statvfs);
/// zeros when it cannot be read.
struct space {
  int64_t total_bytes = 0;
  int64_t free_bytes = 0;
};
space space_of(const std::string& path);

} // namespace allox::os
