// SPDX-License-Identifier: Apache-2.0
#include "guest/os/workspace_files.hpp"

#include "messages/ids.hpp"

#include <boost/beast/core/detail/base64.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace allox::os {

namespace {

namespace base64 = boost::beast::detail::base64;

file_kind kind_of(mode_t m) {
  if (S_ISREG(m))
    return file_kind::file;
  if (S_ISDIR(m))
    return file_kind::directory;
  if (S_ISLNK(m))
    return file_kind::symlink;
  return file_kind::other;
}

file_entry describe(const std::string& rel, const struct stat& sb) {
  return file_entry{rel, kind_of(sb.st_mode), static_cast<int64_t>(sb.st_size),
                    static_cast<int64_t>(sb.st_mode & 07777),
                    static_cast<int64_t>(sb.st_mtim.tv_sec) * 1000000000 +
                        sb.st_mtim.tv_nsec};
}

std::string join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

/// Walks the directory at `dirfd` (named `rel`), never entering symlinks.
caf::error walk(int dirfd, const std::string& rel, bool recursive,
                std::vector<file_entry>& out, size_t cap) {
  auto names = dir_entries(dirfd);
  if (!names)
    return names.error();
  for (const auto& n : *names) {
    struct stat sb {};
    if (::fstatat(dirfd, n.c_str(), &sb, AT_SYMLINK_NOFOLLOW) != 0)
      continue; // gone meanwhile
    auto path = join(rel, n);
    out.push_back(describe(path, sb));
    if (out.size() > cap)
      return make_error(errc::invalid_argument,
                        "too many entries to list (more than " +
                            std::to_string(cap) + ")");
    if (recursive && S_ISDIR(sb.st_mode)) {
      unique_fd sub{::openat(dirfd, n.c_str(),
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
      if (sub)
        if (auto err = walk(sub.get(), path, true, out, cap))
          return err;
    }
  }
  return caf::none;
}

/// Removes everything inside the directory at `dirfd`; counts entries.
caf::error empty_dir(int dirfd, uint64_t& removed) {
  auto names = dir_entries(dirfd);
  if (!names)
    return names.error();
  for (const auto& n : *names) {
    struct stat sb {};
    if (::fstatat(dirfd, n.c_str(), &sb, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if (S_ISDIR(sb.st_mode)) {
      unique_fd sub{::openat(dirfd, n.c_str(),
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
      if (!sub)
        return sys_error("open " + n);
      if (auto err = empty_dir(sub.get(), removed))
        return err;
      if (::unlinkat(dirfd, n.c_str(), AT_REMOVEDIR) != 0)
        return sys_error("remove " + n);
    } else if (::unlinkat(dirfd, n.c_str(), 0) != 0) {
      return sys_error("remove " + n);
    }
    ++removed;
  }
  return caf::none;
}

} // namespace

expected<std::vector<std::string>> dir_entries(int dirfd) {
  int copy = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0)
    return sys_error("dup");
  DIR* d = ::fdopendir(copy);
  if (!d) {
    ::close(copy);
    return sys_error("fdopendir");
  }
  ::rewinddir(d);
  std::vector<std::string> names;
  while (auto* e = ::readdir(d)) {
    std::string n{e->d_name};
    if (n != "." && n != "..")
      names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

caf::error path_error(const std::string& rel, int err) {
  switch (err) {
  case ENOENT:
    return make_error(errc::not_found, "no such file: " + rel);
  case EXDEV:
  case ELOOP:
    return make_error(errc::invalid_argument,
                      "path leaves the workspace: " + rel);
  case EEXIST:
    return make_error(errc::already_exists, "already exists: " + rel);
  case ENOTDIR:
    return make_error(errc::invalid_argument, "not a directory: " + rel);
  case EISDIR:
    return make_error(errc::invalid_argument, "is a directory: " + rel);
  case ENXIO: // a FIFO without a reader, opened for writing
    return make_error(errc::invalid_argument, "not a regular file: " + rel);
  case ENOTEMPTY:
    return make_error(errc::conflict, "directory not empty: " + rel);
  case ENOSPC:
  case EDQUOT:
    return make_error(errc::no_space, rel + ": " + std::strerror(err));
  default:
    return make_error(errc::internal, rel + ": " + std::strerror(err));
  }
}

caf::error write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    auto n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return sys_error("write");
    data.remove_prefix(static_cast<size_t>(n));
  }
  return caf::none;
}

expected<workspace_root> workspace_root::open(const std::string& dir) {
  workspace_root r;
  r.fd_.reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!r.fd_)
    return sys_error("open workspace " + dir);
  struct stat sb {};
  if (::fstat(r.fd_.get(), &sb) != 0)
    return sys_error("stat workspace " + dir);
  r.uid_ = sb.st_uid;
  r.gid_ = sb.st_gid;
  r.dev_ = sb.st_dev;
  return r;
}

caf::error workspace_root::own(int fd) const {
  if (::fchown(fd, uid_, gid_) != 0)
    return sys_error("change the owner of a new entry");
  return caf::none;
}

expected<unique_fd> workspace_root::open_beneath(std::string_view rel,
                                                 int flags,
                                                 unsigned mode) const {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  std::string path = rel.empty() ? "." : std::string{rel};
  for (;;) {
    long fd = ::syscall(SYS_openat2, fd_.get(), path.c_str(), &how, sizeof how);
    if (fd >= 0)
      return unique_fd{static_cast<int>(fd)};
    if (errno == EAGAIN || errno == EINTR)
      continue; // a concurrent rename; resolve again
    return path_error(std::string{rel}, errno);
  }
}

expected<std::pair<unique_fd, std::string>>
workspace_root::open_parent(std::string_view rel) const {
  if (rel.empty())
    return make_error(errc::invalid_argument,
                      "the workspace itself cannot be changed this way");
  auto slash = rel.rfind('/');
  auto dir = slash == std::string_view::npos ? std::string_view{}
                                             : rel.substr(0, slash);
  auto name = slash == std::string_view::npos ? rel : rel.substr(slash + 1);
  auto fd = open_beneath(dir, O_RDONLY | O_DIRECTORY);
  if (!fd)
    return fd.error();
  return std::make_pair(std::move(*fd), std::string{name});
}

expected<std::string> clean_path(std::string_view path) {
  if (path.size() > 4096 || path.find('\0') != std::string_view::npos)
    return make_error(errc::invalid_argument, "invalid path");
  if (!path.empty() && path.front() == '/')
    return make_error(errc::invalid_argument,
                      "path must be relative to the workspace: " +
                          std::string{path});
  std::string out;
  size_t i = 0;
  while (i <= path.size()) {
    auto j = path.find('/', i);
    if (j == std::string_view::npos)
      j = path.size();
    auto part = path.substr(i, j - i);
    if (part == "..")
      return make_error(errc::invalid_argument,
                        "path leaves the workspace: " + std::string{path});
    if (!part.empty() && part != ".") {
      if (!out.empty())
        out += '/';
      out.append(part);
    }
    i = j + 1;
  }
  return out;
}

expected<file_entry> stat_file(const workspace_root& root,
                               const std::string& rel) {
  auto fd = root.open_beneath(rel, O_PATH | O_NOFOLLOW);
  if (!fd)
    return fd.error();
  struct stat sb {};
  if (::fstat(fd->get(), &sb) != 0)
    return sys_error("stat " + rel);
  return describe(rel, sb);
}

expected<dir_page> list_files(const workspace_root& root,
                              const std::string& rel, bool recursive,
                              size_t limit, const std::string& cursor) {
  auto fd = root.open_beneath(rel, O_RDONLY | O_DIRECTORY);
  if (!fd)
    return fd.error();
  std::vector<file_entry> all;
  if (auto err = walk(fd->get(), rel, recursive, all, 200000))
    return err;
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  dir_page page;
  page.path = rel;
  for (auto& e : all) {
    if (!cursor.empty() && !(cursor < e.path))
      continue;
    if (page.entries.size() == limit) {
      page.has_more = true;
      break;
    }
    page.entries.push_back(std::move(e));
  }
  if (page.has_more && !page.entries.empty())
    page.next_cursor = page.entries.back().path;
  return page;
}

expected<std::pair<unique_fd, struct stat>>
open_regular(const workspace_root& root, const std::string& rel) {
  // O_NONBLOCK: a FIFO must not hold the reader; it is refused below.
  auto fd = root.open_beneath(rel, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
  if (!fd)
    return fd.error();
  struct stat sb {};
  if (::fstat(fd->get(), &sb) != 0)
    return sys_error("stat " + rel);
  if (!S_ISREG(sb.st_mode))
    return make_error(errc::invalid_argument, "not a regular file: " + rel);
  return std::make_pair(std::move(*fd), sb);
}

expected<read_slice> read_file(const workspace_root& root,
                               const std::string& rel, uint64_t offset,
                               size_t limit, bool base64_out) {
  auto opened = open_regular(root, rel);
  if (!opened)
    return opened.error();
  auto& [fd, sb] = *opened;
  std::string data;
  auto size = static_cast<uint64_t>(sb.st_size);
  if (offset < size) {
    data.resize(static_cast<size_t>(std::min<uint64_t>(limit, size - offset)));
    auto n =
        ::pread(fd.get(), data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0)
      return sys_error("read " + rel);
    data.resize(static_cast<size_t>(n));
  }
  read_slice r;
  r.path = rel;
  r.offset = static_cast<int64_t>(offset);
  r.size = static_cast<int64_t>(size);
  r.eof = offset + data.size() >= size;
  r.base64 = base64_out;
  if (base64_out) {
    r.data.resize(base64::encoded_size(data.size()));
    r.data.resize(base64::encode(r.data.data(), data.data(), data.size()));
  } else {
    r.data = std::move(data);
  }
  return r;
}

expected<write_result> write_file(const workspace_root& root,
                                  const std::string& rel, std::string_view data,
                                  unsigned mode, bool append) {
  auto parent = root.open_parent(rel);
  if (!parent)
    return parent.error();
  auto& [dirfd, name] = *parent;
  struct stat sb {};
  if (append) {
    unique_fd fd{
        ::openat(dirfd.get(), name.c_str(),
                 O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
    if (!fd)
      return path_error(rel, errno);
    if (::fstat(fd.get(), &sb) != 0 || !S_ISREG(sb.st_mode))
      return make_error(errc::invalid_argument, "not a regular file: " + rel);
    // Appending through a second link would change a file elsewhere.
    if (sb.st_nlink > 1)
      return make_error(errc::invalid_argument,
                        "file has other hard links: " + rel);
    if (auto err = write_all(fd.get(), data))
      return err;
    if (::fsync(fd.get()) != 0 || ::fstat(fd.get(), &sb) != 0)
      return sys_error("fsync " + rel);
    return write_result{rel, static_cast<int64_t>(sb.st_size)};
  }
  if (auto err = replace_file(dirfd.get(), name, rel, mode, ".allox-write-",
                              [&](int fd) -> caf::error {
                                if (auto e = root.own(fd))
                                  return e;
                                return write_all(fd, data);
                              }))
    return err;
  return write_result{rel, static_cast<int64_t>(data.size())};
}

caf::error replace_file(int dirfd, const std::string& name,
                        const std::string& rel, unsigned mode,
                        std::string_view temp_prefix,
                        const std::function<caf::error(int fd)>& fill,
                        const std::function<void()>& before_rename) {
  // A crash leaves the old file or the new one, never a torn one.
  auto tmp = std::string{temp_prefix} + random_hex_token();
  unique_fd fd{::openat(dirfd, tmp.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        mode)};
  if (!fd)
    return path_error(rel, errno);
  auto fail = [&](caf::error err) {
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return err;
  };
  if (auto err = fill(fd.get()))
    return fail(err);
  if (::fchmod(fd.get(), mode) != 0 || ::fsync(fd.get()) != 0)
    return fail(sys_error("fsync " + rel));
  if (before_rename)
    before_rename();
  if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0)
    return fail(path_error(rel, errno));
  if (::fsync(dirfd) != 0)
    return sys_error("fsync the directory of " + rel);
  return caf::none;
}

caf::error make_dir(const workspace_root& root, const std::string& rel,
                    bool parents) {
  if (!parents) {
    auto parent = root.open_parent(rel);
    if (!parent)
      return parent.error();
    if (::mkdirat(parent->first.get(), parent->second.c_str(), 0755) != 0)
      return path_error(rel, errno);
    unique_fd made{::openat(parent->first.get(), parent->second.c_str(),
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (!made)
      return path_error(rel, errno);
    return root.own(made.get());
  }
  // One component at a time, each opened beneath the last without
  // following symlinks.
  unique_fd dir{::fcntl(root.fd(), F_DUPFD_CLOEXEC, 0)};
  size_t i = 0;
  while (i < rel.size()) {
    auto j = rel.find('/', i);
    if (j == std::string::npos)
      j = rel.size();
    auto part = rel.substr(i, j - i);
    bool created = ::mkdirat(dir.get(), part.c_str(), 0755) == 0;
    if (!created && errno != EEXIST)
      return path_error(rel.substr(0, j), errno);
    unique_fd next{::openat(dir.get(), part.c_str(),
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (!next)
      return path_error(rel.substr(0, j), errno);
    if (created)
      if (auto err = root.own(next.get()))
        return err;
    dir = std::move(next);
    i = j + 1;
  }
  return caf::none;
}

expected<uint64_t> remove_path(const workspace_root& root,
                               const std::string& rel, bool recursive) {
  auto parent = root.open_parent(rel);
  if (!parent)
    return parent.error();
  auto& [dirfd, name] = *parent;
  struct stat sb {};
  if (::fstatat(dirfd.get(), name.c_str(), &sb, AT_SYMLINK_NOFOLLOW) != 0)
    return path_error(rel, errno);
  uint64_t removed = 0;
  if (S_ISDIR(sb.st_mode)) {
    if (recursive) {
      unique_fd sub{::openat(dirfd.get(), name.c_str(),
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
      if (!sub)
        return path_error(rel, errno);
      if (auto err = empty_dir(sub.get(), removed))
        return err;
    }
    if (::unlinkat(dirfd.get(), name.c_str(), AT_REMOVEDIR) != 0)
      return path_error(rel, errno);
  } else if (::unlinkat(dirfd.get(), name.c_str(), 0) != 0) {
    return path_error(rel, errno);
  }
  return removed + 1;
}

caf::error move_path(const workspace_root& root, const std::string& from,
                     const std::string& to, bool replace) {
  auto a = root.open_parent(from);
  if (!a)
    return a.error();
  auto b = root.open_parent(to);
  if (!b)
    return b.error();
  if (replace) {
    struct stat st {};
    if (::fstatat(b->first.get(), b->second.c_str(), &st,
                  AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode))
      return make_error(errc::invalid_argument,
                        "is a directory, not replaced: " + to);
  }
  if (::renameat2(a->first.get(), a->second.c_str(), b->first.get(),
                  b->second.c_str(), replace ? 0 : RENAME_NOREPLACE) != 0)
    return path_error(errno == EEXIST ? to : from, errno);
  return caf::none;
}

} // namespace allox::os
