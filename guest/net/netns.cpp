// SPDX-License-Identifier: Apache-2.0
#include "guest/net/netns.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstring>
#include <thread>

namespace allox::net {
namespace {

/// IFF_UP|IFF_RUNNING on `lo` of the calling thread's namespace.
caf::error loopback_up() {
  os::unique_fd s{::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
  if (!s)
    return sys_error("socket for ioctl");
  ifreq req{};
  std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(s.get(), SIOCGIFFLAGS, &req) != 0)
    return sys_error("read the flags of lo");
  req.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (::ioctl(s.get(), SIOCSIFFLAGS, &req) != 0)
    return sys_error("bring lo up");
  return caf::none;
}

expected<os::unique_fd> listen_on(uint16_t port) {
  os::unique_fd s{
      ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
  if (!s)
    return sys_error("proxy socket");
  int one = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  ::inet_pton(AF_INET, proxy_host, &sa.sin_addr);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
    return sys_error("bind the proxy to 127.0.0.1:" + std::to_string(port));
  if (::listen(s.get(), 1024) != 0)
    return sys_error("listen on the proxy socket");
  return s;
}

} // namespace

expected<proxy_namespace> make_proxy_namespace(uint16_t port) {
  expected<proxy_namespace> out = make_error(errc::internal, "not run");
  // A thread of its own: unshare(CLONE_NEWNET) moves only the calling
  // thread, and this one ends right after, so no thread of the daemon
  // stays in the namespace.
  std::thread maker{[&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      out = sys_error("create a network namespace");
      return;
    }
    proxy_namespace p;
    p.ns.reset(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!p.ns) {
      out = sys_error("open the new network namespace");
      return;
    }
    struct stat st {};
    if (::fstat(p.ns.get(), &st) == 0)
      p.inode = st.st_ino;
    if (auto err = loopback_up()) {
      out = std::move(err);
      return;
    }
    auto l = listen_on(port);
    if (!l) {
      out = l.error();
      return;
    }
    p.listener = std::move(*l);
    out = std::move(p);
  }};
  maker.join();
  return out;
}

} // namespace allox::net
