// SPDX-License-Identifier: Apache-2.0
#include "guest/os/btrfs_quota.hpp"

#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "guest/os/unique_fd.hpp"

#include <btrfsutil.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <sys/ioctl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace allox::os {

namespace {

/// The filesystem's top-level subvolume (BTRFS_FS_TREE_OBJECTID).
constexpr uint64_t top_level = 5;

/// BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA, from kernels newer than this
/// machine's headers; older kernels refuse it with EINVAL.
constexpr uint64_t quota_ctl_enable_simple = 4;

/// A qgroupid's level sits in its top 16 bits ("1/7" is 1 << 48 | 7).
constexpr int level_shift = 48;

caf::error ioctl_error(const char* what, const std::string& path) {
  return make_error(errc::internal, std::string{what} + " on " + path + ": " +
                                        std::strerror(errno));
}

unique_fd open_dir(const std::string& path) {
  return unique_fd{::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
}

/// Where the quota ioctls about the tree at `path` are made: the directory
/// holding it. Each starts a transaction on the tree its fd is in, which
/// reserves metadata against that tree's qgroups: made from inside a group
/// at its limit, even lifting the limit would fail with EDQUOT.
unique_fd open_outside(const std::string& path) {
  return open_dir(path + "/..");
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

std::string sysfs_name(uint64_t qgroupid) {
  return std::to_string(qgroupid >> level_shift) + "_" +
         std::to_string(qgroupid & ((uint64_t{1} << level_shift) - 1));
}

/// What sysfs shows of `qgroupid` on the filesystem `fd` is on.
std::optional<qgroup_usage> read_sysfs_qgroup(int fd, uint64_t qgroupid) {
  auto dir = sysfs_dir(fd);
  if (!dir)
    return std::nullopt;
  auto group = *dir + "/qgroups/" + sysfs_name(qgroupid);
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

/// The qgroups sysfs shows for the filesystem `fd` is on ("0_256",
/// "1_3", ...; also its few files): none when quotas are off.
expected<std::vector<std::string>> sysfs_qgroups(int fd,
                                                 const std::string& path) {
  auto dir = sysfs_dir(fd);
  if (!dir)
    return ioctl_error("reading the Btrfs filesystem's id", path);
  auto names = list_dir(*dir + "/qgroups");
  return names ? std::move(*names) : std::vector<std::string>{};
}

/// True when the quota tree relates `qgroupid` to another qgroup: a
/// member below it or a group above it (relations are stored both ways,
/// keyed by each end).
bool has_relations(int fd, uint64_t qgroupid) {
  btrfs_ioctl_search_args args{};
  auto& key = args.key;
  key.tree_id = BTRFS_QUOTA_TREE_OBJECTID;
  key.min_objectid = key.max_objectid = qgroupid;
  key.min_type = key.max_type = BTRFS_QGROUP_RELATION_KEY;
  key.max_offset = ~uint64_t{0};
  key.max_transid = ~uint64_t{0};
  key.nr_items = 1;
  // A failed search keeps the group: removing one in use would be worse.
  return ::ioctl(fd, BTRFS_IOC_TREE_SEARCH, &args) != 0 || key.nr_items != 0;
}

} // namespace

caf::error enable_quotas(const std::string& path, bool prefer_simple) {
  auto fd = open_dir(path);
  if (!fd)
    return ioctl_error("open", path);
  if (quotas_mode(path) != quota_mode::off)
    return caf::none;
  btrfs_ioctl_quota_ctl_args args{};
  if (prefer_simple) {
    args.cmd = quota_ctl_enable_simple;
    if (::ioctl(fd.get(), BTRFS_IOC_QUOTA_CTL, &args) == 0)
      return caf::none; // simple quotas start at zero: no rescan
    if (errno != EINVAL)
      return ioctl_error("enabling Btrfs simple quotas", path);
  }
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
  return read_sysfs_qgroup(fd.get(), id);
}

namespace {
/// What read_qgroup reads of a subvolume's own limit; for a plain
/// directory it would read the tree the directory is in.
bool limited(const std::string& path, std::optional<uint64_t> max_bytes) {
  auto now = read_qgroup(path);
  return now && now->max_referenced == max_bytes;
}
} // namespace

bool subvolume_limited(const std::string& path,
                       std::optional<uint64_t> max_bytes) {
  return is_subvolume(path) && limited(path, max_bytes);
}

caf::error limit_subvolume(const std::string& path,
                           std::optional<uint64_t> max_bytes) {
  if (!is_subvolume(path))
    return make_error(errc::unsupported,
                      path + " is a plain directory (made before the store's "
                             "quotas were on): it is not limited");
  if (limited(path, max_bytes))
    return caf::none;
  return limit_referenced(path, max_bytes);
}

quota_mode quotas_mode(const std::string& path) {
  auto fd = open_dir(path);
  if (!fd)
    return quota_mode::off;
  auto dir = sysfs_dir(fd.get());
  if (!dir || ::access((*dir + "/qgroups").c_str(), F_OK) != 0)
    return quota_mode::off;
  // Kernels without simple quotas have no "mode" file.
  std::ifstream in{*dir + "/qgroups/mode"};
  std::string mode;
  return in >> mode && mode == "squota" ? quota_mode::simple : quota_mode::full;
}

std::optional<uint64_t> disk_group(const std::string& path) {
  auto fd = open_dir(path);
  uint64_t id = 0;
  if (!fd || btrfs_util_subvolume_id_fd(fd.get(), &id) != BTRFS_UTIL_OK)
    return std::nullopt;
  // A relation is stored both ways; (child, RELATION, parent) items with
  // an offset from level 1 up name the groups the subvolume is in.
  btrfs_ioctl_search_args args{};
  auto& key = args.key;
  key.tree_id = BTRFS_QUOTA_TREE_OBJECTID;
  key.min_objectid = key.max_objectid = id;
  key.min_type = key.max_type = BTRFS_QGROUP_RELATION_KEY;
  key.min_offset = uint64_t{1} << level_shift;
  key.max_offset = ~uint64_t{0};
  key.max_transid = ~uint64_t{0};
  key.nr_items = 1;
  if (::ioctl(fd.get(), BTRFS_IOC_TREE_SEARCH, &args) != 0 || key.nr_items == 0)
    return std::nullopt;
  btrfs_ioctl_search_header header{};
  std::memcpy(&header, args.buf, sizeof(header));
  if (header.objectid != id || header.type != BTRFS_QGROUP_RELATION_KEY)
    return std::nullopt;
  return header.offset;
}

expected<uint64_t> create_disk_group(const std::string& path) {
  auto fd = open_outside(path);
  if (!fd)
    return ioctl_error("open", path);
  auto names = sysfs_qgroups(fd.get(), path);
  if (!names)
    return names.error();
  if (names->empty())
    return make_error(errc::unsupported,
                      "quotas are off on the filesystem holding " + path);
  uint64_t next = 1;
  for (const auto& name : *names)
    if (name.rfind("1_", 0) == 0)
      next = std::max<uint64_t>(
          next, std::strtoull(name.c_str() + 2, nullptr, 10) + 1);
  // Another caller may take `next` first: the kernel refuses a second
  // create with EEXIST, and this one takes the number after.
  for (int attempt = 0; attempt < 64; ++attempt, ++next) {
    btrfs_ioctl_qgroup_create_args args{};
    args.create = 1;
    args.qgroupid = (uint64_t{1} << level_shift) | next;
    if (::ioctl(fd.get(), BTRFS_IOC_QGROUP_CREATE, &args) == 0)
      return args.qgroupid;
    if (errno != EEXIST)
      return ioctl_error("creating a Btrfs qgroup", path);
  }
  return make_error(errc::internal, "no free disk group on " + path);
}

caf::error join_disk_group(const std::string& path, uint64_t group) {
  auto fd = open_dir(path);
  uint64_t id = 0;
  if (!fd || btrfs_util_subvolume_id_fd(fd.get(), &id) != BTRFS_UTIL_OK)
    return ioctl_error("reading the subvolume id", path);
  fd = open_outside(path);
  if (!fd)
    return ioctl_error("open", path + "/..");
  btrfs_ioctl_qgroup_assign_args args{};
  args.assign = 1;
  args.src = id;
  args.dst = group;
  // Above zero means the kernel marked the counts for a rescan: full
  // quotas only, which never join.
  if (::ioctl(fd.get(), BTRFS_IOC_QGROUP_ASSIGN, &args) < 0)
    return ioctl_error("joining a Btrfs qgroup", path);
  return caf::none;
}

expected<std::optional<uint64_t>> ensure_disk_group(const std::string& path) {
  if (quotas_mode(path) != quota_mode::simple)
    return std::optional<uint64_t>{};
  if (auto group = disk_group(path))
    return group;
  auto group = create_disk_group(path);
  if (!group)
    return group.error();
  if (auto err = join_disk_group(path, *group))
    return err;
  return std::optional<uint64_t>{*group};
}

caf::error limit_share(const std::string& path,
                       std::optional<uint64_t> max_bytes) {
  if (quotas_mode(path) != quota_mode::simple)
    return limit_referenced(path, max_bytes);
  auto group = disk_group(path);
  if (!group)
    return caf::none;
  auto fd = open_outside(path);
  if (!fd)
    return ioctl_error("open", path + "/..");
  if (auto now = read_sysfs_qgroup(fd.get(), *group);
      now && now->max_referenced == max_bytes)
    return caf::none; // a rollback's restored tree joined it, limit and all
  btrfs_ioctl_qgroup_limit_args args{};
  args.qgroupid = *group;
  args.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
  args.lim.max_rfer = max_bytes ? *max_bytes : ~uint64_t{0};
  if (::ioctl(fd.get(), BTRFS_IOC_QGROUP_LIMIT, &args) != 0)
    return ioctl_error("setting the Btrfs quota", path);
  return caf::none;
}

std::optional<qgroup_usage> read_share(const std::string& path) {
  if (quotas_mode(path) != quota_mode::simple)
    return read_qgroup(path);
  auto group = disk_group(path);
  auto fd = open_dir(path);
  if (!group || !fd)
    return std::nullopt;
  return read_sysfs_qgroup(fd.get(), *group);
}

expected<qgroup_sweep_result>
remove_stale_qgroups(const std::string& path,
                     const std::vector<uint64_t>& empty_before) {
  auto fd = open_dir(path);
  if (!fd)
    return ioctl_error("open", path);
  auto groups = sysfs_qgroups(fd.get(), path);
  if (!groups)
    return groups.error();
  qgroup_sweep_result out;
  auto remove = [&](uint64_t qgroupid) {
    btrfs_ioctl_qgroup_create_args args{};
    args.create = 0;
    args.qgroupid = qgroupid;
    return ::ioctl(fd.get(), BTRFS_IOC_QGROUP_CREATE, &args) == 0;
  };
  for (const auto& name : *groups) {
    if (name.rfind("1_", 0) == 0) {
      uint64_t group = (uint64_t{1} << level_shift) |
                       std::strtoull(name.c_str() + 2, nullptr, 10);
      if (has_relations(fd.get(), group))
        continue;
      if (std::find(empty_before.begin(), empty_before.end(), group) ==
          empty_before.end())
        out.empty_groups.push_back(group);
      else if (remove(group))
        ++out.groups;
      else
        out.empty_groups.push_back(group); // still counting: next time
      continue;
    }
    // "0_<subvolume id>"
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
    if (remove(id))
      ++out.trees;
  }
  return out;
}

bool qgroup_exists(const std::string& path, uint64_t qgroupid) {
  auto fd = open_dir(path);
  if (!fd)
    return false;
  auto dir = sysfs_dir(fd.get());
  return dir && ::access((*dir + "/qgroups/" + sysfs_name(qgroupid)).c_str(),
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
