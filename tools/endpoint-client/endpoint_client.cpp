// SPDX-License-Identifier: Apache-2.0
#include "tools/endpoint-client/endpoint_client.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace allox::tools {

namespace json = boost::json;

std::optional<json::object> endpoint_request(const char* tool,
                                             const std::string& action,
                                             const json::object& params) {
  const char* path = std::getenv("ALLOX_EVENTS_SOCKET");
  std::string where = path && *path ? path : "/run/allox/events.sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd < 0 || where.size() >= sizeof addr.sun_path) {
    std::cerr << tool << ": no socket for " << where << "\n";
    if (fd >= 0)
      ::close(fd);
    return std::nullopt;
  }
  std::memcpy(addr.sun_path, where.c_str(), where.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::cerr << tool << ": cannot reach " << where << ": "
              << std::strerror(errno) << "\n";
    ::close(fd);
    return std::nullopt;
  }
  auto line =
      json::serialize(json::object{{"action", action}, {"params", params}}) +
      "\n";
  for (size_t done = 0; done < line.size();) {
    // MSG_NOSIGNAL: a closed endpoint is an error here, not a SIGPIPE.
    auto n = ::send(fd, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      std::cerr << tool << ": the endpoint went away\n";
      ::close(fd);
      return std::nullopt;
    }
    done += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[65536];
  while (reply.find('\n') == std::string::npos) {
    auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  boost::system::error_code ec;
  auto doc = json::parse(reply.substr(0, reply.find('\n')), ec);
  if (ec || !doc.is_object()) {
    std::cerr << tool << ": no reply from the endpoint\n";
    return std::nullopt;
  }
  return std::move(doc.as_object());
}

} // namespace allox::tools
