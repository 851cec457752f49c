// SPDX-License-Identifier: Apache-2.0
// A watch on a directory of a session's workspace (inotify), for clients
// that follow changes as they happen (E2B's WatchDir and watchers). Each
// directory is opened beneath the workspace (openat2, as every file call)
// and watched through its descriptor, so a symlink never leads a watch
// out; with `recursive`, directories created later are watched as they
// appear. The descriptor is non-blocking: read() never waits.
//
// Blocking: read() may walk a new directory tree; call from a worker.
#pragma once

#include "guest/os/unique_fd.hpp"
#include "guest/os/workspace_files.hpp"
#include "messages/errors.hpp"
#include "messages/results/files.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace allox::os {

class dir_watch {
public:
  /// Watches directory `rel` beneath `root` (and every directory below it
  /// with `recursive`, at most `max_dirs`).
  static expected<dir_watch> open(const workspace_root& root,
                                  const std::string& rel, bool recursive,
                                  size_t max_dirs = 8192);

  /// The events queued since the last read, in order; none when nothing
  /// happened. `lost` is set when the kernel's queue overflowed.
  expected<std::vector<file_change>> read(const workspace_root& root,
                                          bool& lost);

  int fd() const { return fd_.get(); }

private:
  /// Adds a watch on `dir` (below the watched one; "" is itself), and on
  /// its subdirectories with recursive.
  caf::error add(const workspace_root& root, const std::string& dir);

  unique_fd fd_;
  /// The watched directory, relative to the workspace.
  std::string base_;
  bool recursive_ = false;
  size_t max_dirs_ = 0;
  /// Watch descriptor -> its directory below base_ ("" for base_).
  std::map<int, std::string> dirs_;
};

} // namespace allox::os
