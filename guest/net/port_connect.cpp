// SPDX-License-Identifier: Apache-2.0
#include "guest/net/port_connect.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
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

/// Connects to loopback `port` in the calling thread's namespace: a
/// blocking connect (loopback answers at once), then non-blocking.
os::unique_fd connect_loopback(uint16_t port, int& err) {
  for (int family : {AF_INET, AF_INET6}) {
    os::unique_fd s{::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
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
    if (rc == 0) {
      ::fcntl(s.get(), F_SETFL, ::fcntl(s.get(), F_GETFL) | O_NONBLOCK);
      return s;
    }
    err = errno;
  }
  return {};
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

expected<os::unique_fd> connect_in_group(const std::string& group,
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
  for (int pid : pids)
    add(os::unique_fd{
        ::open(("/proc/" + std::to_string(pid) + "/ns/net").c_str(),
               O_RDONLY | O_CLOEXEC)});
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
