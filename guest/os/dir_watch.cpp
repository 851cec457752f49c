// SPDX-License-Identifier: Apache-2.0
#include "guest/os/dir_watch.hpp"

#include <fcntl.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace allox::os {

namespace {

constexpr uint32_t watch_mask = IN_CREATE | IN_MODIFY | IN_DELETE |
                                IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |
                                IN_DELETE_SELF | IN_ONLYDIR;

std::string joined(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

} // namespace

expected<dir_watch> dir_watch::open(const workspace_root& root,
                                    const std::string& rel, bool recursive,
                                    size_t max_dirs) {
  dir_watch w;
  w.fd_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!w.fd_)
    return errno == EMFILE
               ? make_error(errc::conflict, "too many watches on this machine")
               : sys_error("inotify_init1");
  w.base_ = rel;
  w.recursive_ = recursive;
  w.max_dirs_ = max_dirs;
  if (auto err = w.add(root, ""))
    return err;
  return w;
}

caf::error dir_watch::add(const workspace_root& root, const std::string& dir) {
  std::vector<std::string> todo{dir};
  while (!todo.empty()) {
    auto next = std::move(todo.back());
    todo.pop_back();
    if (dirs_.size() >= max_dirs_)
      return make_error(errc::payload_too_large,
                        "more than " + std::to_string(max_dirs_) +
                            " directories to watch under " + base_);
    // Opened beneath the workspace, then watched through its descriptor:
    // the magic link names exactly the directory openat2 resolved.
    auto fd = root.open_beneath(joined(base_, next),
                                O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!fd) {
      if (next.empty())
        return fd.error();
      continue; // gone or swapped for a symlink meanwhile
    }
    auto at = "/proc/self/fd/" + std::to_string(fd->get());
    int wd = ::inotify_add_watch(fd_.get(), at.c_str(), watch_mask);
    if (wd < 0) {
      if (errno == ENOSPC)
        return make_error(errc::conflict,
                          "the machine's inotify watch limit is reached");
      return sys_error("watch " + joined(base_, next));
    }
    dirs_[wd] = next;
    if (!recursive_)
      continue;
    auto names = dir_entries(fd->get());
    if (!names)
      continue;
    for (const auto& name : *names) {
      struct stat sb {};
      if (::fstatat(fd->get(), name.c_str(), &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISDIR(sb.st_mode) && sb.st_dev == root.dev())
        todo.push_back(joined(next, name));
    }
  }
  return caf::none;
}

expected<std::vector<file_change>> dir_watch::read(const workspace_root& root,
                                                   bool& lost) {
  std::vector<file_change> out;
  alignas(struct inotify_event) char buf[64 * 1024];
  for (;;) {
    auto n = ::read(fd_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return out;
    if (n < 0)
      return sys_error("read the watch of " + base_);
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(p);
      p += sizeof(struct inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        lost = true;
        continue;
      }
      auto dir = dirs_.find(ev->wd);
      if (dir == dirs_.end())
        continue;
      if (ev->mask & (IN_IGNORED | IN_DELETE_SELF)) {
        if (ev->mask & IN_IGNORED)
          dirs_.erase(dir);
        continue;
      }
      if (ev->len == 0)
        continue;
      auto name = joined(dir->second, ev->name);
      change_kind op = change_kind::write;
      if (ev->mask & (IN_CREATE | IN_MOVED_TO))
        op = change_kind::create;
      else if (ev->mask & IN_DELETE)
        op = change_kind::remove;
      else if (ev->mask & IN_MOVED_FROM)
        op = change_kind::rename;
      else if (ev->mask & IN_ATTRIB)
        op = change_kind::chmod;
      out.push_back({name, op});
      // A directory made (or moved) below a recursive watch is watched
      // from now on; what was made in it before that is reported as made.
      if (recursive_ && (ev->mask & IN_ISDIR) &&
          (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
        auto before = dirs_.size();
        if (auto err = add(root, name))
          return err;
        if (dirs_.size() > before)
          if (auto page =
                  list_files(root, joined(base_, name), true, max_dirs_, {}))
            for (const auto& e : page->entries)
              out.push_back(
                  {e.path.substr(base_.empty() ? 0 : base_.size() + 1),
                   change_kind::create});
      }
    }
  }
}

} // namespace allox::os
