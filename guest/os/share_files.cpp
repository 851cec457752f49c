// SPDX-License-Identifier: Apache-2.0
#include "guest/os/share_files.hpp"

#include "messages/share.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace allox::os {

namespace {

caf::error cross_filesystem() {
  return make_error(errc::invalid_argument,
                    "cross-filesystem sharing is not supported");
}

/// The prototype's one answer for what the OS refused (missing, a
/// symlink on the way, not a directory ...): the caller learns no more.
caf::error unavailable(int err) {
  if (err == EXDEV)
    return cross_filesystem();
  return make_error(err == ENOENT ? errc::not_found : errc::invalid_argument,
                    "shared file unavailable or unsupported");
}

caf::error not_regular() {
  return make_error(errc::invalid_argument,
                    "only regular files without hard links can be shared");
}

caf::error needs_file() {
  return make_error(errc::invalid_argument, "read/write requires a file path");
}

std::string join(const std::vector<std::string>& parts, size_t n) {
  std::string rel;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0)
      rel += '/';
    rel += parts[i];
  }
  return rel;
}

/// Opens the directory of the first `n` parts into `dir`, beneath the
/// root without following any symlink, on the root's device; 0, or the
/// errno of the failure (EXDEV: on another device).
int open_dir(const workspace_root& root, const std::vector<std::string>& parts,
             size_t n, unique_fd& dir) {
  auto rel = n == 0 ? std::string{"."} : join(parts, n);
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV |
                RESOLVE_NO_SYMLINKS;
  for (;;) {
    long fd = ::syscall(SYS_openat2, root.fd(), rel.c_str(), &how, sizeof how);
    if (fd >= 0) {
      dir.reset(static_cast<int>(fd));
      struct stat sb {};
      if (::fstat(dir.get(), &sb) != 0)
        return errno;
      return sb.st_dev == root.dev() ? 0 : EXDEV;
    }
    if (errno == EAGAIN || errno == EINTR)
      continue; // a concurrent rename; resolve again
    return errno;
  }
}

/// open_dir with the caller's error.
expected<unique_fd> open_dir(const workspace_root& root,
                             const std::vector<std::string>& parts, size_t n) {
  unique_fd dir;
  if (int err = open_dir(root, parts, n, dir))
    return unavailable(err);
  return dir;
}

/// Whether `sb` is a file share.read and share.write may touch.
bool shareable(const struct stat& sb) {
  return S_ISREG(sb.st_mode) && sb.st_nlink == 1;
}

} // namespace

caf::error share_check_scope(const workspace_root& root,
                             const std::vector<std::string>& parts) {
  unique_fd dir;
  int err = open_dir(root, parts, parts.size(), dir);
  if (err == 0)
    return caf::none;
  if (err == EXDEV)
    return cross_filesystem();
  return make_error(err == ENOENT ? errc::not_found : errc::invalid_argument,
                    "scope must be an existing directory reachable without "
                    "symlinks");
}

expected<share_listing> share_list(const workspace_root& root,
                                   const std::vector<std::string>& parts) {
  auto dir = open_dir(root, parts, parts.size());
  if (!dir)
    return dir.error();
  auto names = dir_entries(dir->get());
  if (!names)
    return names.error();
  if (names->size() > share_max_entries)
    return make_error(errc::invalid_argument,
                      "directory has more than " +
                          std::to_string(share_max_entries) + " entries");
  share_listing r;
  for (const auto& n : *names) {
    struct stat sb {};
    if (::fstatat(dir->get(), n.c_str(), &sb, AT_SYMLINK_NOFOLLOW) != 0)
      continue; // gone meanwhile
    using kind = share_entry::kind;
    auto type = S_ISDIR(sb.st_mode)   ? kind::directory
                : S_ISREG(sb.st_mode) ? kind::file
                                      : kind::unsupported;
    r.entries.push_back(
        {n, type, S_ISREG(sb.st_mode) ? static_cast<int64_t>(sb.st_size) : 0});
  }
  return r;
}

expected<share_content> share_read(const workspace_root& root,
                                   const std::vector<std::string>& parts) {
  if (parts.empty())
    return needs_file();
  auto dir = open_dir(root, parts, parts.size() - 1);
  if (!dir)
    return dir.error();
  const auto& name = parts.back();
  // Looked at before it is opened: a FIFO or a device is never opened.
  struct stat before {};
  if (::fstatat(dir->get(), name.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0)
    return unavailable(errno);
  if (!shareable(before))
    return not_regular();
  unique_fd fd{::openat(dir->get(), name.c_str(),
                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  if (!fd)
    return unavailable(errno);
  struct stat sb {};
  if (::fstat(fd.get(), &sb) != 0)
    return unavailable(errno);
  // Swapped between the two looks: judged again as what was opened.
  if (!shareable(sb) || sb.st_ino != before.st_ino)
    return not_regular();
  if (sb.st_dev != root.dev())
    return cross_filesystem();
  auto too_large = [] {
    return make_error(errc::payload_too_large, "file exceeds 256 KiB");
  };
  if (static_cast<uint64_t>(sb.st_size) > share_max_file)
    return too_large();
  // One byte more than the limit tells a file that grew meanwhile.
  std::string data(share_max_file + 1, '\0');
  size_t got = 0;
  while (got < data.size()) {
    auto n = ::pread(fd.get(), data.data() + got, data.size() - got,
                     static_cast<off_t>(got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return unavailable(errno);
    if (n == 0)
      break;
    got += static_cast<size_t>(n);
  }
  if (got > share_max_file)
    return too_large();
  data.resize(got);
  return share_content{std::move(data)};
}

expected<share_written> share_write(const workspace_root& root,
                                    const std::vector<std::string>& parts,
                                    std::string_view data,
                                    const std::function<void()>& prepared) {
  if (parts.empty())
    return needs_file();
  auto dir = open_dir(root, parts, parts.size() - 1);
  if (!dir)
    return dir.error();
  const auto& name = parts.back();
  struct stat sb {};
  if (::fstatat(dir->get(), name.c_str(), &sb, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!shareable(sb))
      return make_error(errc::invalid_argument,
                        "cannot replace a link, directory or special file");
    if (sb.st_dev != root.dev())
      return cross_filesystem();
  } else if (errno != ENOENT) {
    return unavailable(errno);
  }
  auto rel = join(parts, parts.size());
  if (auto err = replace_file(
          dir->get(), name, rel, 0600, ".allox-share-",
          [&](int fd) -> caf::error {
            if (auto e = root.own(fd))
              return e;
            return write_all(fd, data);
          },
          prepared))
    return err;
  return share_written{static_cast<int64_t>(data.size())};
}

} // namespace allox::os
