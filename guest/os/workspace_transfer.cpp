// SPDX-License-Identifier: Apache-2.0
#include "guest/os/workspace_transfer.hpp"

#include "guest/os/socket_queue.hpp"
#include "guest/os/writeback.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
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

namespace {

/// Bytes per sendfile call: the loop hears of progress this often.
constexpr size_t send_step = 4 << 20;

/// Waits until `sock` takes more (or has failed: the next call says how);
/// false once `going()` says stop. poll(2) reports room only once a third
/// of the send buffer is free, which a slow reader may take seconds to
/// make: the queue shrinking meanwhile is progress too.
bool writable(int sock, const std::function<bool()>& going,
              const std::function<void()>& moved) {
  int queued = unacknowledged(sock);
  for (;;) {
    if (!going())
      return false;
    pollfd p{sock, POLLOUT, 0};
    int n = ::poll(&p, 1, 250);
    if (n > 0)
      return true;
    if (n < 0 && errno != EINTR)
      return false;
    int now = unacknowledged(sock);
    if (now < queued)
      moved();
    queued = now;
  }
}

caf::error stopped() {
  return make_error(errc::invalid_argument, "the client went away");
}

} // namespace

caf::error send_file(int fd, uint64_t size, int sock, std::string_view head,
                     const std::function<bool()>& going,
                     const std::function<void()>& moved) {
  while (!head.empty()) {
    auto n = ::send(sock, head.data(), head.size(), MSG_NOSIGNAL);
    if (n >= 0) {
      head.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN)
      return sys_error("send");
    if (!writable(sock, going, moved))
      return stopped();
  }
  off_t at = 0;
  while (static_cast<uint64_t>(at) < size) {
    auto want = static_cast<size_t>(
        std::min<uint64_t>(send_step, size - static_cast<uint64_t>(at)));
    auto n = ::sendfile(sock, fd, &at, want);
    if (n > 0) {
      moved();
      continue;
    }
    if (n == 0)
      return make_error(errc::conflict, "the file shrank during the download");
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN)
      return sys_error("sendfile");
    if (!writable(sock, going, moved))
      return stopped();
  }
  return caf::none;
}

} // namespace allox::os
