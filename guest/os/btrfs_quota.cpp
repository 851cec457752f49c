// SPDX-License-Identifier: Apache-2.0
#include "guest/os/btrfs_quota.hpp"

#include "guest/os/fs.hpp"
#include "guest/os/unique_fd.hpp"

#include <btrfsutil.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <sys/ioctl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace allox::os {

namespace {

/// The filesystem's top-level subvolume (BTRFS_FS_TREE_OBJECTID).
constexpr uint64_t top_level = 5;

caf::error ioctl_error(const char* what, const std::string& path) {
  return make_error(errc::internal, std::string{what} + " on " + path + ": " +
                                        std::strerror(errno));
}

unique_fd open_dir(const std::string& path) {
  return unique_fd{::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
}

/// /sys/fs/btrfs/<fsid>, where the kernel shows the filesystem's qgroups.
std::optional<std::string> sysfs_dir(int fd) {
  btrfs_ioctl_fs_info_args fs{};
  if (::ioctl(fd, BTRFS_IOC_FS_INFO, &fs) != 0)
    return std::nullopt;
  char uuid[37];
  const auto* b = fs.fsid;
  std::snprintf(uuid, sizeof(uuid),
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
                "%02x%02x%02x%02x%02x%02x",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
                b[10], b[11], b[12], b[13], b[14], b[15]);
  return std::string{"/sys/fs/btrfs/"} + uuid;
}

std::optional<uint64_t> read_u64(const std::string& file) {
  std::ifstream in{file};
  uint64_t v = 0;
  if (!(in >> v))
    return std::nullopt;
  return v;
}

} // namespace

caf::error enable_quotas(const std::string& path) {
  auto fd = open_dir(path);
  if (!fd)
    return ioctl_error("open", path);
  btrfs_ioctl_quota_ctl_args args{};
  args.cmd = BTRFS_QUOTA_CTL_ENABLE;
  if (::ioctl(fd.get(), BTRFS_IOC_QUOTA_CTL, &args) != 0)
    return ioctl_error("enabling Btrfs quotas", path);
  // Enabling starts a rescan of what exists; until it ends the counts,
  // and so the limits, are not to be trusted.
  if (::ioctl(fd.get(), BTRFS_IOC_QUOTA_RESCAN_WAIT, 0) != 0)
    return ioctl_error("waiting for the Btrfs quota rescan", path);
  return caf::none;
}

bool quotas_enabled(const std::string& path) {
  auto fd = open_dir(path);
  if (!fd)
    return false;
  auto dir = sysfs_dir(fd.get());
  return dir && ::access((*dir + "/qgroups").c_str(), F_OK) == 0;
}

caf::error limit_referenced(const std::string& path,
                            std::optional<uint64_t> max_bytes) {
  auto fd = open_dir(path);
  if (!fd)
    return ioctl_error("open", path);
  btrfs_ioctl_qgroup_limit_args args{};
  args.qgroupid = 0; // the qgroup of the subvolume fd is in
  args.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
  // All ones clears the limit (as `btrfs qgroup limit none`).
  args.lim.max_rfer = max_bytes ? *max_bytes : ~uint64_t{0};
  if (::ioctl(fd.get(), BTRFS_IOC_QGROUP_LIMIT, &args) != 0)
    return ioctl_error("setting the Btrfs quota", path);
  return caf::none;
}

std::optional<qgroup_usage> read_qgroup(const std::string& path) {
  auto fd = open_dir(path);
  if (!fd)
    return std::nullopt;
  uint64_t id = 0;
  if (btrfs_util_subvolume_id_fd(fd.get(), &id) != BTRFS_UTIL_OK)
    return std::nullopt;
  auto dir = sysfs_dir(fd.get());
  if (!dir)
    return std::nullopt;
  auto group = *dir + "/qgroups/0_" + std::to_string(id);
  auto rfer = read_u64(group + "/referenced");
  auto excl = read_u64(group + "/exclusive");
  if (!rfer || !excl)
    return std::nullopt;
  qgroup_usage u;
  u.referenced = *rfer;
  u.exclusive = *excl;
  auto flags = read_u64(group + "/limit_flags");
  if (flags && (*flags & BTRFS_QGROUP_LIMIT_MAX_RFER) != 0)
    u.max_referenced = read_u64(group + "/max_referenced");
  return u;
}

expected<size_t> remove_stale_qgroups(const std::string& path) {
  auto fd = open_dir(path);
  if (!fd)
    return ioctl_error("open", path);
  auto dir = sysfs_dir(fd.get());
  if (!dir)
    return ioctl_error("reading the Btrfs filesystem's id", path);
  auto groups = list_dir(*dir + "/qgroups");
  if (!groups)
    return size_t{0}; // quotas are off
  size_t removed = 0;
  for (const auto& name : *groups) {
    // "0_<subvolume id>"; higher levels are not ours to remove.
    if (name.rfind("0_", 0) != 0)
      continue;
    uint64_t id = std::strtoull(name.c_str() + 2, nullptr, 10);
    if (id == 0 || id == top_level)
      continue;
    // Deleted: its root item is gone (dropped), or has lost its back
    // reference, the name that put it in the tree (deleted, waiting for
    // the cleaner, which only drops at a commit it is woken for).
    struct btrfs_util_subvolume_info info {};
    auto found = btrfs_util_subvolume_info_fd(fd.get(), id, &info);
    if (found == BTRFS_UTIL_OK ? info.parent_id != 0
                               : found != BTRFS_UTIL_ERROR_SUBVOLUME_NOT_FOUND)
      continue;
    btrfs_ioctl_qgroup_create_args args{};
    args.create = 0;
    args.qgroupid = id;
    if (::ioctl(fd.get(), BTRFS_IOC_QGROUP_CREATE, &args) == 0)
      ++removed;
  }
  return removed;
}

bool qgroup_exists(const std::string& path, uint64_t id) {
  auto fd = open_dir(path);
  if (!fd)
    return false;
  auto dir = sysfs_dir(fd.get());
  return dir && ::access((*dir + "/qgroups/0_" + std::to_string(id)).c_str(),
                         F_OK) == 0;
}

caf::error commit_and_clean(const std::string& path) {
  auto fd = open_dir(path);
  if (!fd || ::ioctl(fd.get(), BTRFS_IOC_SYNC, 0) != 0)
    return ioctl_error("syncing", path);
  return caf::none;
}

uint64_t filesystem_bytes(const std::string& path) {
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0)
    return 0;
  return static_cast<uint64_t>(s.f_blocks) * s.f_frsize;
}

expected<std::optional<uint64_t>> parse_disk_limit(const std::string& value,
                                                   uint64_t total_bytes) {
  auto bad = [&](const char* why) {
    return make_error(errc::invalid_argument, "invalid value for disk.max: \"" +
                                                  value + "\" (" + why + ")");
  };
  if (value == "max")
    return std::optional<uint64_t>{};
  size_t digits = 0;
  while (digits < value.size() && value[digits] >= '0' && value[digits] <= '9')
    ++digits;
  if (digits == 0 || digits > 18)
    return bad("bytes, with K, M, G or T, a percentage of the store, or max");
  uint64_t n = std::stoull(value.substr(0, digits));
  auto unit = value.substr(digits);
  uint64_t bytes = 0;
  if (unit == "%") {
    if (n > 100)
      return bad("a percentage above 100");
    bytes = total_bytes / 100 * n;
  } else {
    int shift = unit.empty()  ? 0
                : unit == "K" ? 10
                : unit == "M" ? 20
                : unit == "G" ? 30
                : unit == "T" ? 40
                              : -1;
    if (shift < 0)
      return bad("bytes, with K, M, G or T, a percentage of the store, or max");
    if (n > (~uint64_t{0} >> 1) >> shift)
      return bad("too large");
    bytes = n << shift;
  }
  if (bytes == 0)
    return bad("a share of zero bytes could not hold the workspace");
  return std::optional<uint64_t>{bytes};
}

} // namespace allox::os
