// SPDX-License-Identifier: Apache-2.0
#include "guest/os/btrfs.hpp"

#include "guest/os/mountinfo.hpp"
#include "guest/os/unique_fd.hpp"

#include <btrfsutil.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace allox::os {

namespace {

caf::error btrfs_error(const char* what, const std::string& path,
                       enum btrfs_util_error err) {
  std::string msg = what;
  msg += " failed for ";
  msg += path;
  msg += ": ";
  msg += btrfs_util_strerror(err);
  if (errno != 0) {
    msg += " (";
    msg += std::strerror(errno);
    msg += ')';
  }
  return make_error(errc::internal, std::move(msg));
}

caf::error errno_error(const char* what, const std::string& path) {
  return make_error(errc::internal, std::string{what} + " " + path + ": " +
                                        std::strerror(errno));
}

} // namespace

expected<std::string> filesystem_type(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr)
    return errno_error("cannot resolve", path);
  if (auto mounts = read_mountinfo()) {
    if (auto* m = mount_containing(*mounts, resolved))
      return m->fs_type;
  }
  struct statfs sfs {};
  if (statfs(resolved, &sfs) != 0)
    return errno_error("statfs", path);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%lx",
                static_cast<unsigned long>(sfs.f_type));
  return std::string{buf};
}

caf::error require_btrfs(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    return make_error(errc::invalid_argument,
                      "workspace root does not exist: " + path);
  struct statfs sfs {};
  if (statfs(path.c_str(), &sfs) != 0)
    return errno_error("statfs", path);
  if (sfs.f_type == BTRFS_SUPER_MAGIC)
    return caf::none;
  auto type = filesystem_type(path);
  return make_error(errc::invalid_argument,
                    "workspace root must be Btrfs, got: " +
                        (type ? *type : std::string{"unknown"}));
}

caf::error create_subvolume(const std::string& path) {
  errno = 0;
  auto err = btrfs_util_create_subvolume(path.c_str(), 0, nullptr, nullptr);
  if (err != BTRFS_UTIL_OK)
    return btrfs_error("create subvolume", path, err);
  return caf::none;
}

caf::error create_snapshot(const std::string& source, const std::string& target,
                           bool read_only, std::optional<uint64_t> group) {
  btrfs_util_qgroup_inherit* inherit = nullptr;
  if (group) {
    auto err = btrfs_util_create_qgroup_inherit(0, &inherit);
    if (err == BTRFS_UTIL_OK)
      err = btrfs_util_qgroup_inherit_add_group(&inherit, *group);
    if (err != BTRFS_UTIL_OK) {
      btrfs_util_destroy_qgroup_inherit(inherit);
      return btrfs_error("snapshot", target, err);
    }
  }
  errno = 0;
  int flags = read_only ? BTRFS_UTIL_CREATE_SNAPSHOT_READ_ONLY : 0;
  auto err = btrfs_util_create_snapshot(source.c_str(), target.c_str(), flags,
                                        nullptr, inherit);
  btrfs_util_destroy_qgroup_inherit(inherit);
  if (err != BTRFS_UTIL_OK)
    return btrfs_error("snapshot", target, err);
  return caf::none;
}

caf::error delete_subvolume(const std::string& path) {
  errno = 0;
  // A read-only snapshot can be deleted directly; nested subvolumes (made by
  // a program inside the workspace) go with it.
  auto err = btrfs_util_delete_subvolume(path.c_str(),
                                         BTRFS_UTIL_DELETE_SUBVOLUME_RECURSIVE);
  if (err != BTRFS_UTIL_OK)
    return btrfs_error("delete subvolume", path, err);
  return caf::none;
}

expected<uint64_t> committed_generation(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errno_error("open", path);
  errno = 0;
  auto err = btrfs_util_sync_fd(fd);
  struct btrfs_util_subvolume_info info {};
  if (err == BTRFS_UTIL_OK)
    err = btrfs_util_subvolume_info_fd(fd, 0, &info);
  ::close(fd);
  if (err != BTRFS_UTIL_OK)
    return btrfs_error("generation", path, err);
  return static_cast<uint64_t>(info.generation);
}

expected<uint64_t> subvolume_id(const std::string& path) {
  uint64_t id = 0;
  if (auto err = btrfs_util_subvolume_id(path.c_str(), &id);
      err != BTRFS_UTIL_OK)
    return btrfs_error("subvolume id", path, err);
  return id;
}

bool is_subvolume(const std::string& path) {
  return btrfs_util_is_subvolume(path.c_str()) == BTRFS_UTIL_OK;
}

caf::error remove_tree(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0)
    return errno == ENOENT ? caf::none : errno_error("lstat", path);
  if (!S_ISDIR(st.st_mode)) {
    if (unlink(path.c_str()) != 0 && errno != ENOENT)
      return errno_error("unlink", path);
    return caf::none;
  }
  if (is_subvolume(path)) {
    // Read-only snapshots refuse unlink inside them; the ioctl removes the
    // whole subvolume at once anyway.
    return delete_subvolume(path);
  }
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr)
    return errno_error("opendir", path);
  caf::error first_error;
  while (auto* ent = readdir(dir)) {
    std::string_view name = ent->d_name;
    if (name == "." || name == "..")
      continue;
    if (auto err = remove_tree(path + "/" + ent->d_name); err && !first_error)
      first_error = std::move(err);
  }
  closedir(dir);
  if (first_error)
    return first_error;
  if (rmdir(path.c_str()) != 0 && errno != ENOENT)
    return errno_error("rmdir", path);
  return caf::none;
}

} // namespace allox::os

namespace allox::os {

bool same_btrfs(const std::string& a, const std::string& b) {
  auto fsid = [](const std::string& path) -> std::optional<std::string> {
    unique_fd fd{::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    btrfs_ioctl_fs_info_args fs{};
    if (!fd || ::ioctl(fd.get(), BTRFS_IOC_FS_INFO, &fs) != 0)
      return std::nullopt;
    return std::string{reinterpret_cast<const char*>(fs.fsid), sizeof(fs.fsid)};
  };
  auto x = fsid(a);
  return x && x == fsid(b);
}

std::vector<std::string> block_devices(const std::string& path) {
  std::vector<std::string> out;
  unique_fd fd{::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (!fd)
    return out;
  btrfs_ioctl_fs_info_args fs{};
  if (::ioctl(fd.get(), BTRFS_IOC_FS_INFO, &fs) != 0)
    return out;
  // Device ids may have holes (a device removed); max_id bounds them.
  for (uint64_t id = 1; id <= fs.max_id; ++id) {
    btrfs_ioctl_dev_info_args dev{};
    dev.devid = id;
    if (::ioctl(fd.get(), BTRFS_IOC_DEV_INFO, &dev) != 0)
      continue;
    struct stat st {};
    auto* name = reinterpret_cast<const char*>(dev.path);
    if (::stat(name, &st) == 0 && S_ISBLK(st.st_mode))
      out.push_back(std::to_string(major(st.st_rdev)) + ":" +
                    std::to_string(minor(st.st_rdev)));
  }
  return out;
}

} // namespace allox::os
