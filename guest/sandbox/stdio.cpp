// SPDX-License-Identifier: Apache-2.0
#include "guest/sandbox/stdio.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>

namespace allox::sandbox {

expected<run_stdio> open_stdin_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return sys_error("pipe for the run's stdin");
  run_stdio s;
  s.child.reset(fds[0]);
  s.input.reset(fds[1]);
  // Only the daemon's end: the run's end stays blocking.
  if (::fcntl(s.input.get(), F_SETFL, O_NONBLOCK) != 0)
    return sys_error("non-blocking stdin pipe");
  return s;
}

expected<run_stdio> open_terminal(uint16_t rows, uint16_t cols) {
  int master = -1;
  int slave = -1;
  winsize ws{};
  ws.ws_row = rows;
  ws.ws_col = cols;
  if (::openpty(&master, &slave, nullptr, nullptr, &ws) != 0)
    return sys_error("openpty");
  run_stdio s;
  s.input.reset(master);
  s.child.reset(slave);
  s.terminal = true;
  if (::fcntl(master, F_SETFD, FD_CLOEXEC) != 0 ||
      ::fcntl(slave, F_SETFD, FD_CLOEXEC) != 0)
    return sys_error("close-on-exec terminal");
  // The pump polls, so the master may be non-blocking for process.input.
  if (::fcntl(master, F_SETFL, O_NONBLOCK) != 0)
    return sys_error("non-blocking terminal");
  return s;
}

caf::error resize_terminal(int master, uint16_t rows, uint16_t cols) {
  winsize ws{};
  ws.ws_row = rows;
  ws.ws_col = cols;
  if (::ioctl(master, TIOCSWINSZ, &ws) != 0)
    return sys_error("resize the terminal");
  return caf::none;
}

expected<size_t> write_input(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    auto n = ::write(fd, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      break;
    // EPIPE/EIO: nobody will ever read it.
    if (done > 0)
      break;
    return sys_error("write to the run's input");
  }
  return done;
}

void pump_terminal(int master, int out) {
  char buf[16384];
  for (;;) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, -1) < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    auto n = ::read(master, buf, sizeof buf);
    if (n > 0) {
      for (ssize_t off = 0; off < n;) {
        auto w = ::write(out, buf + off, static_cast<size_t>(n - off));
        if (w <= 0) {
          if (w < 0 && errno == EINTR)
            continue;
          return;
        }
        off += w;
      }
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    // EIO: the last process holding the terminal closed it.
    return;
  }
}

} // namespace allox::sandbox
