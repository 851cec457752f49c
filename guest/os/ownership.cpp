// SPDX-License-Identifier: Apache-2.0
#include "guest/os/ownership.hpp"

#include "guest/os/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <vector>

namespace allox::os {

namespace {

/// Changes the entries of the open directory `dir` (on device `dev`),
/// depth first, then the directory itself. Iterative over an explicit
/// stack, so a deep tree cannot exhaust the thread's stack.
caf::error hand_over_fd(unique_fd top, dev_t dev, uid_t uid, gid_t gid) {
  struct close_dir {
    void operator()(DIR* d) const { ::closedir(d); }
  };
  struct frame {
    unique_fd fd;
    std::unique_ptr<DIR, close_dir> d;
  };
  std::vector<frame> stack;
  auto open_frame = [&stack](unique_fd fd) -> caf::error {
    // A description of its own: a dup would share (and start at) the
    // caller's directory position.
    int dup = ::openat(fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* d = dup < 0 ? nullptr : ::fdopendir(dup);
    if (d == nullptr) {
      if (dup >= 0)
        ::close(dup);
      return sys_error("read a directory to hand over");
    }
    stack.push_back({std::move(fd), std::unique_ptr<DIR, close_dir>{d}});
    return caf::none;
  };
  if (auto err = open_frame(std::move(top)))
    return err;
  while (!stack.empty()) {
    auto& f = stack.back();
    errno = 0;
    auto* e = ::readdir(f.d.get());
    if (e == nullptr) {
      if (errno != 0)
        return sys_error("read a directory to hand over");
      // The directory is done: change it last.
      int rc = ::fchown(f.fd.get(), uid, gid);
      stack.pop_back();
      if (rc != 0)
        return sys_error("change the owner of a directory");
      continue;
    }
    std::string name = e->d_name;
    if (name == "." || name == "..")
      continue;
    struct stat st {};
    if (::fstatat(f.fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT)
        continue; // removed meanwhile
      return sys_error("stat " + name);
    }
    if (st.st_dev != dev)
      continue; // another file system or subvolume: not ours to change
    if (S_ISDIR(st.st_mode)) {
      unique_fd sub{::openat(f.fd.get(), name.c_str(),
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
      if (!sub) {
        if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)
          continue; // swapped meanwhile: whatever is there now is not it
        return sys_error("open " + name);
      }
      if (auto err = open_frame(std::move(sub)))
        return err;
      continue;
    }
    if ((st.st_uid != uid || st.st_gid != gid) &&
        ::fchownat(f.fd.get(), name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) !=
            0 &&
        errno != ENOENT)
      return sys_error("change the owner of " + name);
  }
  return caf::none;
}

} // namespace

bool owned_by(const std::string& dir, uid_t uid, gid_t gid) {
  struct stat st {};
  return ::lstat(dir.c_str(), &st) == 0 && st.st_uid == uid && st.st_gid == gid;
}

caf::error hand_over(const std::string& dir, uid_t uid, gid_t gid) {
  unique_fd top{
      ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
  if (!top)
    return sys_error("open " + dir);
  return hand_over(top.get(), uid, gid);
}

caf::error hand_over(int dir, uid_t uid, gid_t gid) {
  unique_fd top{::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  struct stat st {};
  if (!top || ::fstat(top.get(), &st) != 0)
    return sys_error("open a directory to hand over");
  return hand_over_fd(std::move(top), st.st_dev, uid, gid);
}

} // namespace allox::os
