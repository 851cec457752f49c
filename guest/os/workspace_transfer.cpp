#include "guest/os/workspace_transfer.hpp"

#include "guest/os/writeback.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace allox::os {

namespace {

/// Bytes an upload writes between two write-back kicks.
constexpr uint64_t writeback_step = 16 << 20;

} // namespace

expected<json::object> receive_file(const workspace_root& root,
                                    const std::string& rel, pull_fn pull) {
  auto parent = root.open_parent(rel);
  if (!parent)
    return parent.error();
  auto& [dirfd, name] = *parent;
  unsigned mode = 0644;
  struct stat sb {};
  if (::fstatat(dirfd.get(), name.c_str(), &sb, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(sb.st_mode))
      return make_error(errc::invalid_argument,
                        "is a directory (send a tar stream): " + rel);
    if (S_ISREG(sb.st_mode))
      mode = sb.st_mode & 0777;
  }
  uint64_t size = 0;
  auto fill = [&](int fd) -> caf::error {
    if (auto e = root.own(fd))
      return e;
    // The fsync at the end then waits for the last stretch only, not the
    // whole file.
    background_writeback writeback{fd, writeback_step};
    std::string_view chunk;
    for (;;) {
      auto more = pull(chunk);
      if (!more)
        return more.error();
      if (!*more)
        return caf::none;
      if (auto failed = write_all(fd, chunk))
        return failed;
      size += chunk.size();
      writeback.written(size);
    }
  };
  auto err =
      replace_file(dirfd.get(), name, rel, mode, upload_temp_prefix, fill);
  if (err)
    return err;
  return json::object{
      {"path", rel}, {"type", "file"}, {"size", static_cast<int64_t>(size)}};
}

expected<download_source> open_download(const workspace_root& root,
                                        const std::string& rel) {
  // O_PATH first: a FIFO or device is looked at, never opened for reading.
  auto path = root.open_beneath(rel, O_PATH | O_NOFOLLOW);
  if (!path)
    return path.error();
  struct stat sb {};
  if (::fstat(path->get(), &sb) != 0)
    return sys_error("stat " + rel);
  download_source src;
  if (S_ISDIR(sb.st_mode)) {
    src.directory = true;
  } else if (!S_ISREG(sb.st_mode)) {
    return make_error(errc::invalid_argument,
                      "not a regular file or directory: " + rel);
  }
  auto fd = root.open_beneath(rel, O_RDONLY | O_NOFOLLOW |
                                       (src.directory ? O_DIRECTORY : 0));
  if (!fd)
    return fd.error();
  if (::fstat(fd->get(), &sb) != 0)
    return sys_error("stat " + rel);
  // Swapped for something else between the two opens.
  if (src.directory != S_ISDIR(sb.st_mode) ||
      (!src.directory && !S_ISREG(sb.st_mode)))
    return make_error(errc::conflict, "changed while opening: " + rel);
  src.size = static_cast<uint64_t>(sb.st_size);
  src.fd = std::move(*fd);
  return src;
}

caf::error send_file(int fd, uint64_t size, const push_fn& push) {
  uint64_t sent = 0;
  while (sent < size) {
    std::string chunk(
        static_cast<size_t>(std::min<uint64_t>(transfer_chunk, size - sent)),
        '\0');
    auto n = ::pread(fd, chunk.data(), chunk.size(), static_cast<off_t>(sent));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return sys_error("read");
    if (n == 0)
      return make_error(errc::conflict, "the file shrank during the download");
    chunk.resize(static_cast<size_t>(n));
    sent += static_cast<uint64_t>(n);
    if (auto err = push(std::move(chunk)))
      return err;
  }
  return caf::none;
}

} // namespace allox::os
