// SPDX-License-Identifier: Apache-2.0
// Directories of a session as tar streams (PUT and GET /v1/files/... with
// Content-Type: application/x-tar), read and written with libarchive.
//
// Extraction never leaves the target and never has a side effect when it
// fails: the stream is extracted into a temporary directory beside the
// target (`.allox-upload-<hex>`), created entry by entry relative to
// directory fds, one component at a time with O_NOFOLLOW, so no symlink
// is ever followed (not even one the same stream created). Only when the
// whole stream was valid is the tree synced and swapped into place in one
// rename; otherwise it is removed. Every entry obeys the path rules:
// relative, no `..` component, at most `max_depth` levels; regular files,
// directories, symlinks (stored as links, whatever they point to) and
// hard links to earlier entries only: device nodes, FIFOs and sockets are
// refused. Modes keep their permission bits only (no set-id bits); files
// belong to the daemon's user, as files the sandbox writes do.
//
// Blocking: call from the transfer's own worker thread.
#pragma once

#include "guest/os/workspace_transfer.hpp"

namespace allox::os {

struct tar_limits {
  /// Most bytes all entries together may hold (their sizes, holes
  /// included, so a sparse entry cannot expand beyond it).
  uint64_t max_bytes = uint64_t{8} << 30;
  uint64_t max_entries = 1000000;
  /// Most directory levels below the target (deeper is refused).
  size_t max_depth = 256;
};

/// Replaces directory `rel` (created when missing; the workspace root
/// itself cannot be replaced) with the content of the tar stream the body
/// carries. {path, type: "directory", entries, size}.
expected<json::object> receive_tar(const workspace_root& root,
                                   const std::string& rel, pull_fn pull,
                                   const tar_limits& limits);

/// Pushes the directory open at `dirfd` as a tar stream (pax), entries
/// named relative to it, in name order; symlinks are stored as links and
/// never entered, FIFOs, sockets and devices are left out. A tree deeper
/// than `max_depth` fails the stream. {entries, skipped}.
expected<json::object> send_tar(int dirfd, const push_fn& push,
                                size_t max_depth);

} // namespace allox::os
