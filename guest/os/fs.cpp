// SPDX-License-Identifier: Apache-2.0
#include "guest/os/fs.hpp"

#include "guest/os/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace allox::os {

namespace {

caf::error unmanaged(const std::string& path, const std::string& label) {
  return make_error(errc::invalid_argument,
                    label + " is not a managed directory: " + path);
}

} // namespace

entry_kind kind_of(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0)
    return entry_kind::missing;
  if (S_ISLNK(st.st_mode))
    return entry_kind::symlink;
  if (S_ISDIR(st.st_mode))
    return entry_kind::directory;
  return entry_kind::other;
}

caf::error require_managed_dir(const std::string& path,
                               const std::string& label) {
  switch (kind_of(path)) {
  case entry_kind::directory:
    return caf::none;
  case entry_kind::missing:
    return make_error(errc::not_found, label + " does not exist: " + path);
  default:
    return unmanaged(path, label);
  }
}

caf::error ensure_managed_dir(const std::string& path, unsigned mode,
                              const std::string& label) {
  if (mkdir(path.c_str(), mode) == 0)
    return caf::none;
  if (errno != EEXIST)
    return sys_error("mkdir " + path);
  if (kind_of(path) != entry_kind::directory)
    return unmanaged(path, label);
  return caf::none;
}

caf::error fsync_dir(const std::string& path) {
  unique_fd fd{::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (!fd)
    return sys_error("open " + path);
  if (::fsync(fd.get()) != 0)
    return sys_error("fsync " + path);
  return caf::none;
}

expected<std::vector<std::string>> list_dir(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr)
    return sys_error("opendir " + path);
  std::vector<std::string> names;
  while (auto* ent = readdir(dir)) {
    std::string_view n = ent->d_name;
    if (n != "." && n != "..")
      names.emplace_back(n);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

caf::error rename_path(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    return sys_error("rename " + from + " -> " + to);
  return caf::none;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Relative paths work too. A parent can vanish between two steps when
// its owner removes it (an agent being deleted, a test cleaning up), so ENOENT
// starts over from the top a few times before it counts as an error.
caf::error make_dirs(const std::string& path) {
  constexpr int attempts = 8;
  for (int attempt = 1;; ++attempt) {
    bool vanished = false;
    for (size_t pos = 0; pos != std::string::npos;) {
      pos = path.find('/', pos + 1);
      auto part = path.substr(0, pos);
      if (::mkdir(part.c_str(), 0755) == 0 || errno == EEXIST)
        continue;
      if (errno != ENOENT || attempt == attempts)
        return sys_error("mkdir " + part);
      vanished = true;
      break;
    }
    if (!vanished)
      return caf::none;
  }
}

namespace {
// nftw has no user pointer; the walk runs on one thread at a time per
// caller, so a thread-local sum is enough.
thread_local int64_t walk_bytes = 0;

int add_blocks(const char*, const struct stat* st, int, struct FTW*) {
  walk_bytes += static_cast<int64_t>(st->st_blocks) * 512;
  return 0;
}
} // namespace

int64_t allocated_bytes(const std::string& path) {
  walk_bytes = 0;
  (void)::nftw(path.c_str(), add_blocks, 32, FTW_PHYS | FTW_MOUNT);
  return walk_bytes;
}

space space_of(const std::string& path) {
  struct statvfs v {};
  if (::statvfs(path.c_str(), &v) != 0)
    return {};
  return {static_cast<int64_t>(v.f_blocks) * static_cast<int64_t>(v.f_frsize),
          static_cast<int64_t>(v.f_bavail) * static_cast<int64_t>(v.f_frsize)};
}

} // namespace allox::os
