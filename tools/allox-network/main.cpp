// SPDX-License-Identifier: Apache-2.0
// allox-network: a TCP stream through the session's proxy, for what is not
// HTTP (an SSH ProxyCommand, a database client). Bound into the runs of
// proxy-mode sessions at /run/allox/bin/allox-network.
//
//   allox-network connect HOST PORT
//
// Sends `CONNECT HOST:PORT` to the proxy at 127.0.0.1:3128 (or
// $ALLOX_PROXY, host:port), then copies stdin to the connection and the
// connection to stdout until both have ended; the end of stdin is passed
// on as a half-close. Exit 0 when the stream ended, 1 when the proxy
// refused it or the connection failed (the proxy's reason on stderr), 2
// on bad usage.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace {

int usage() {
  std::cerr << "usage: allox-network connect HOST PORT\n";
  return 2;
}

int fail(const std::string& why) {
  std::cerr << "allox-network: " << why << "\n";
  return 1;
}

bool write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    auto w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

/// The proxy's address: $ALLOX_PROXY (IPv4 host:port) or 127.0.0.1:3128.
bool proxy_address(sockaddr_in& sa) {
  std::string where = "127.0.0.1:3128";
  if (const char* env = std::getenv("ALLOX_PROXY"); env && *env)
    where = env;
  auto colon = where.rfind(':');
  if (colon == std::string::npos)
    return false;
  sa = {};
  sa.sin_family = AF_INET;
  sa.sin_port =
      htons(static_cast<uint16_t>(std::atoi(where.c_str() + colon + 1)));
  return ::inet_pton(AF_INET, where.substr(0, colon).c_str(), &sa.sin_addr) ==
         1;
}

/// Copies both ways until the connection and stdin have ended.
int relay(int s) {
  bool in_open = true;
  char buf[64 * 1024];
  for (;;) {
    pollfd fds[2] = {{s, POLLIN, 0},
                     {0, static_cast<short>(in_open ? POLLIN : 0), 0}};
    if (::poll(fds, in_open ? 2 : 1, -1) < 0) {
      if (errno == EINTR)
        continue;
      return fail(std::string{"poll: "} + std::strerror(errno));
    }
    if (fds[0].revents != 0) {
      auto n = ::read(s, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return fail(std::string{"read: "} + std::strerror(errno));
      if (n == 0)
        return 0;
      if (!write_all(1, buf, static_cast<size_t>(n)))
        return fail("stdout closed");
    }
    if (in_open && fds[1].revents != 0) {
      auto n = ::read(0, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        in_open = false;
        ::shutdown(s, SHUT_WR);
      } else if (!write_all(s, buf, static_cast<size_t>(n))) {
        return fail("the connection closed");
      }
    }
  }
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4 || std::string{argv[1]} != "connect")
    return usage();
  std::string host = argv[2];
  char* end = nullptr;
  long port = std::strtol(argv[3], &end, 10);
  if (host.empty() || *end != '\0' || port < 1 || port > 65535)
    return usage();
  // Stdout going away ends the stream, not the process by a signal.
  ::signal(SIGPIPE, SIG_IGN);
  sockaddr_in sa{};
  if (!proxy_address(sa))
    return fail("ALLOX_PROXY must be IPv4 host:port");
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    return fail(std::string{"no proxy at 127.0.0.1:3128 (is the session in "
                            "proxy network mode?): "} +
                std::strerror(errno));
  auto target =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
      std::to_string(port);
  auto request =
      "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n";
  if (!write_all(s, request.data(), request.size()))
    return fail("the proxy closed the connection");
  // The answer's header, a byte at a time: what follows it is the stream's.
  std::string head;
  char c = 0;
  while (
      head.size() < 64 * 1024 &&
      (head.size() < 4 || head.compare(head.size() - 4, 4, "\r\n\r\n") != 0)) {
    auto n = ::read(s, &c, 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return fail("the proxy closed the connection");
    head += c;
  }
  if (head.compare(0, 12, "HTTP/1.1 200") != 0 &&
      head.compare(0, 12, "HTTP/1.0 200") != 0) {
    // The proxy's reason is the body of its answer.
    std::string body;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(s, buf, sizeof buf)) > 0)
      body.append(buf, static_cast<size_t>(n));
    auto line = head.substr(0, head.find("\r\n"));
    while (!body.empty() && body.back() == '\n')
      body.pop_back();
    return fail(line + (body.empty() ? "" : ": " + body));
  }
  return relay(s);
}
