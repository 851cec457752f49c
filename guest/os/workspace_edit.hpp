// SPDX-License-Identifier: Apache-2.0
// Searching and editing a session's files for agents (file.search,
// file.replace): the two calls coding agents make most after read and
// write. Paths are resolved beneath the workspace as every file.* call's
// (guest/os/workspace_files.hpp); both are bounded, so a huge tree or file
// costs a known amount.
//
// Blocking: call from a worker thread (actors/blocking.hpp).
#pragma once

#include "guest/os/workspace_files.hpp"

#include <cstdint>
#include <string>

namespace allox::os {

/// What one search may cost.
struct search_bounds {
  /// Matching lines returned.
  size_t matches = 200;
  /// Regular files opened.
  size_t files = 20000;
  /// Bytes read over all files.
  uint64_t bytes = uint64_t{256} << 20;
  /// Larger files are skipped.
  uint64_t file_size = uint64_t{16} << 20;
};

/// Longest line text a match carries.
inline constexpr size_t max_search_line = 512;

/// The lines of the regular files beneath directory `rel` whose names
/// match `glob` (every file when empty) that contain `pattern` (a fixed
/// string; a POSIX extended regular expression, as grep -E, with
/// `regex`); with an empty pattern, the
/// files whose names match. Files with a NUL byte in their first 8 KiB are
/// skipped as binary; symlinks are never followed.
expected<search_result> search_files(const workspace_root& root,
                                     const std::string& rel,
                                     const std::string& pattern,
                                     const std::string& glob, bool regex,
                                     const search_bounds& bounds);

/// Replaces every occurrence of `from` in regular file `rel` by `to`, in
/// one rename (guest/os/workspace_files.hpp's write_file), keeping its
/// mode; conflict, with the count, when it does not occur `expected`
/// times, and then nothing changes.
expected<replace_result> replace_in_file(const workspace_root& root,
                                         const std::string& rel,
                                         const std::string& from,
                                         const std::string& to,
                                         int64_t expected, uint64_t max_size);

/// True when `name` (a path below the search's directory) matches `glob`:
/// fnmatch(3) against the last component, or against the whole relative
/// path when the glob has a '/'. An empty glob matches everything.
bool glob_matches(const std::string& glob, const std::string& name);

} // namespace allox::os
