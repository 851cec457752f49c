// SPDX-License-Identifier: Apache-2.0
// Files of a session's workspace for the file.* actions, resolved strictly
// beneath the workspace: every path goes through openat2 with
// RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV, so `..`,
// absolute paths, symlinks leading out (absolute or relative), /proc magic
// links and mounts cannot reach anything outside, also when a sandboxed
// process swaps a component for a symlink between two calls: the kernel
// checks each resolution as it happens. Final components are opened with
// O_NOFOLLOW, writes go to a temporary file renamed into place, and only
// regular files are read or appended to (never FIFOs or devices).
//
// Blocking: call from a worker thread (actors/blocking.hpp).
#pragma once

#include "guest/os/unique_fd.hpp"
#include "messages/errors.hpp"
#include "messages/results/files.hpp"

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace allox::os {

/// A workspace directory whose paths are resolved beneath it.
class workspace_root {
public:
  static expected<workspace_root> open(const std::string& dir);

  /// Opens `rel` beneath the root with openat2; `flags` as for open(2).
  expected<unique_fd> open_beneath(std::string_view rel, int flags,
                                   unsigned mode = 0) const;

  /// The directory holding `rel` (opened beneath the root) and the final
  /// component; refuses the root itself.
  expected<std::pair<unique_fd, std::string>>
  open_parent(std::string_view rel) const;

  int fd() const { return fd_.get(); }

  /// Gives an entry this call created the owner of the root: files the
  /// daemon creates belong to whoever the workspace's runs execute as
  /// (its top is handed to the sandbox user, guest/os/ownership.hpp).
  caf::error own(int fd) const;
  uid_t owner_uid() const { return uid_; }
  gid_t owner_gid() const { return gid_; }
  /// The root's device: a Btrfs subvolume has one of its own, so an entry
  /// on another device lies in a nested subvolume (or across a mount).
  dev_t dev() const { return dev_; }

private:
  unique_fd fd_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  dev_t dev_ = 0;
};

/// The caller's error for a failed call on `rel` (errno `err`): a path
/// leaving the workspace, a missing file, ... each with its stable code.
caf::error path_error(const std::string& rel, int err);

/// Names in the directory open at `dirfd` (no . and ..), sorted.
expected<std::vector<std::string>> dir_entries(int dirfd);

/// Writes all of `data` to `fd`.
caf::error write_all(int fd, std::string_view data);

/// Checks a caller's path: relative, no NUL, no `..`, at most 4096 bytes;
/// "" and "." name the root. Returns it without "./" and trailing slashes.
expected<std::string> clean_path(std::string_view path);

/// The type, size, mode and time of `rel` (a final symlink itself).
expected<file_entry> stat_file(const workspace_root& root,
                               const std::string& rel);

/// The entries under directory `rel` (all levels with `recursive`), sorted
/// by path, `limit` after `cursor` (a path). Symlinked directories are
/// listed, never entered.
expected<dir_page> list_files(const workspace_root& root,
                              const std::string& rel, bool recursive,
                              size_t limit, const std::string& cursor);

/// Regular file `rel` opened for reading, and its stat; a FIFO or device
/// is refused (invalid_argument) without ever blocking on it.
expected<std::pair<unique_fd, struct stat>>
open_regular(const workspace_root& root, const std::string& rel);

/// Up to `limit` bytes of regular file `rel` at `offset`.
expected<read_slice> read_file(const workspace_root& root,
                               const std::string& rel, uint64_t offset,
                               size_t limit, bool base64);

/// Replaces (temp file, fsync, rename, fsync the directory) or appends
/// to regular file `rel`; the parent must exist.
expected<write_result> write_file(const workspace_root& root,
                                  const std::string& rel, std::string_view data,
                                  unsigned mode, bool append);

/// Replaces file `name` in `dirfd` (`rel` to the caller): `fill` writes a
/// temporary file beside it (`temp_prefix<hex>`, mode `mode`), which is
/// fsynced and renamed into place, and the directory fsynced; on any
/// failure the temporary file is removed. `before_rename`, if given, runs
/// once the temporary file is durable, right before the rename.
caf::error replace_file(int dirfd, const std::string& name,
                        const std::string& rel, unsigned mode,
                        std::string_view temp_prefix,
                        const std::function<caf::error(int fd)>& fill,
                        const std::function<void()>& before_rename = {});

/// Creates directory `rel` (and missing parents with `parents`).
caf::error make_dir(const workspace_root& root, const std::string& rel,
                    bool parents);

/// Removes `rel`: a file or symlink, an empty directory, or a whole tree
/// with `recursive` (never following symlinks). Returns entries removed.
expected<uint64_t> remove_path(const workspace_root& root,
                               const std::string& rel, bool recursive);

/// Renames `from` to `to` (both beneath the root); an existing `to` is
/// refused (already_exists) unless `replace`, which puts a file in the
/// place of an existing file in one rename (a directory at `to` is still
/// refused: invalid_argument).
caf::error move_path(const workspace_root& root, const std::string& from,
                     const std::string& to, bool replace = false);

} // namespace allox::os
