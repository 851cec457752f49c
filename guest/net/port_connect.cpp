// SPDX-License-Identifier: Apache-2.0
#include "guest/net/port_connect.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

namespace allox::net {

namespace {

/// The pids of `group` and of every group below it.
void group_pids(const std::string& group, std::vector<int>& out, int depth) {
  std::ifstream procs{group + "/cgroup.procs"};
  for (int pid; procs >> pid;)
    out.push_back(pid);
  if (depth > 16)
    return;
  DIR* dir = ::opendir(group.c_str());
  if (dir == nullptr)
    return;
  while (auto* e = ::readdir(dir))
    if (e->d_type == DT_DIR && e->d_name[0] != '.')
      group_pids(group + "/" + e->d_name, out, depth + 1);
  ::closedir(dir);
}

/// How long a port may take to accept a connection: a listener whose
/// backlog is full drops the SYN, and a blocking connect would wait
/// minutes.
constexpr int connect_timeout_ms = 3000;

/// Connects to loopback `port` in the calling thread's namespace:
/// non-blocking, within connect_timeout_ms.
os::unique_fd connect_loopback(uint16_t port, int& err) {
  for (int family : {AF_INET, AF_INET6}) {
    os::unique_fd s{
        ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
    if (!s) {
      err = errno;
      continue;
    }
    int rc;
    if (family == AF_INET) {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      rc = ::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_port = htons(port);
      a.sin6_addr = in6addr_loopback;
      rc = ::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{s.get(), POLLOUT, 0};
      rc = ::poll(&p, 1, connect_timeout_ms);
      if (rc == 0) {
        err = ETIMEDOUT;
        continue;
      }
      int so = 0;
      socklen_t len = sizeof so;
      if (rc > 0 && ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &so, &len) == 0)
        errno = so;
      rc = so == 0 && rc > 0 ? 0 : -1;
    }
    if (rc == 0)
      return s;
    err = errno;
  }
  return {};
}

/// The network namespace of `pid`, if it is still a process of the group
/// at `group_rel` (mount-relative) or below: a pid that ended and was
/// reused meanwhile is someone else's.
os::unique_fd namespace_of(int pid, const std::string& group_rel) {
  os::unique_fd dir{::open(("/proc/" + std::to_string(pid)).c_str(),
                           O_DIRECTORY | O_RDONLY | O_CLOEXEC)};
  if (!dir)
    return {};
  os::unique_fd ns{::openat(dir.get(), "ns/net", O_RDONLY | O_CLOEXEC)};
  // Checked after opening, through the same /proc/<pid> directory, which
  // refers to that process only, even once its pid is reused.
  os::unique_fd cg{::openat(dir.get(), "cgroup", O_RDONLY | O_CLOEXEC)};
  char buf[4096];
  auto n = cg ? ::read(cg.get(), buf, sizeof buf - 1) : -1;
  if (n <= 0)
    return {};
  std::string_view line{buf, static_cast<size_t>(n)};
  auto at = line.find("0::");
  if (at == std::string_view::npos)
    return {};
  auto path = line.substr(at + 3);
  path = path.substr(0, path.find('\n'));
  if (path != group_rel && (path.size() <= group_rel.size() ||
                            path.compare(0, group_rel.size(), group_rel) != 0 ||
                            path[group_rel.size()] != '/'))
    return {};
  return ns;
}

/// The same, inside namespace `ns`: on a thread of its own, since setns
/// moves only the calling thread (and this one ends right after); the
/// socket keeps the namespace it was made in.
os::unique_fd connect_in(int ns, uint16_t port, int& err) {
  os::unique_fd out;
  std::thread joiner{[&] {
    if (::setns(ns, CLONE_NEWNET) != 0) {
      err = errno;
      return;
    }
    out = connect_loopback(port, err);
  }};
  joiner.join();
  return out;
}

} // namespace

expected<os::unique_fd> connect_in_group(const std::string& mount,
                                         const std::string& group,
                                         uint16_t port, bool own_namespace,
                                         int first_ns) {
  struct stat own {};
  if (::stat("/proc/thread-self/ns/net", &own) != 0)
    return sys_error("stat /proc/thread-self/ns/net");
  std::vector<os::unique_fd> spaces;
  std::set<ino_t> seen;
  if (!own_namespace)
    seen.insert(own.st_ino);
  auto add = [&](os::unique_fd ns) {
    struct stat st {};
    if (ns && ::fstat(ns.get(), &st) == 0 && seen.insert(st.st_ino).second)
      spaces.push_back(std::move(ns));
  };
  if (first_ns >= 0)
    add(os::unique_fd{::fcntl(first_ns, F_DUPFD_CLOEXEC, 0)});
  std::vector<int> pids;
  if (!group.empty())
    group_pids(group, pids, 0);
  auto group_rel = group.substr(std::min(group.size(), mount.size()));
  for (int pid : pids)
    add(namespace_of(pid, group_rel));
  int err = ECONNREFUSED;
  for (const auto& ns : spaces) {
    struct stat st {};
    ::fstat(ns.get(), &st);
    auto s = st.st_ino == own.st_ino ? connect_loopback(port, err)
                                     : connect_in(ns.get(), port, err);
    if (s)
      return s;
  }
  if (spaces.empty())
    return make_error(errc::not_found,
                      "no process of the sandbox runs, so nothing listens on "
                      "port " +
                          std::to_string(port));
  return make_error(errc::not_found,
                    "nothing listens on port " + std::to_string(port) +
                        " in the sandbox (" + std::strerror(err) + ")");
}

} // namespace allox::net
