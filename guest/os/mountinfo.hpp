// SPDX-License-Identifier: Apache-2.0
// Reading /proc/self/mountinfo: which filesystem holds a path, and where
// cgroup v2 is mounted (never assume /sys/fs/cgroup).
#pragma once

#include "messages/errors.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace allox::os {

struct mount_entry {
  int mount_id = 0;
  int parent_id = 0;
  std::string root;        // path inside the filesystem that is mounted
  std::string mount_point; // where it is mounted (unescaped)
  std::string options;     // per-mount options
  std::string fs_type;
  std::string source;
  std::string super_options;
};

/// Parses mountinfo text; malformed lines are skipped.
std::vector<mount_entry> parse_mountinfo(std::string_view text);

/// Reads and parses /proc/self/mountinfo.
expected<std::vector<mount_entry>> read_mountinfo();

/// The deepest mount whose mount point contains `path` (absolute, already
/// resolved). Later entries win over earlier ones at the same point, as the
/// kernel lists over-mounts after what they cover.
const mount_entry* mount_containing(const std::vector<mount_entry>& mounts,
                                    std::string_view path);

/// The first cgroup2 mount, or nullptr.
const mount_entry* find_cgroup2(const std::vector<mount_entry>& mounts);

/// Undoes the octal escapes (\040 \011 \012 \134) of mountinfo fields.
std::string unescape_mount_field(std::string_view field);

} // namespace allox::os
