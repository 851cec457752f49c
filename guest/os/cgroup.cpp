// SPDX-License-Identifier: Apache-2.0
#include "guest/os/cgroup.hpp"

#include "guest/os/fs.hpp"
#include "guest/os/mountinfo.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

namespace allox::os {

namespace {

std::string read_small(const std::string& path) {
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

expected<cgroup_tree> cgroup_tree::open(const std::string& root) {
  auto mounts = read_mountinfo();
  if (!mounts)
    return mounts.error();
  auto* v2 = find_cgroup2(*mounts);
  if (v2 == nullptr)
    return make_error(errc::unsupported, "no cgroup v2 mount found in "
                                         "/proc/self/mountinfo");
  cgroup_tree tree;
  tree.mount_ = v2->mount_point;
  tree.root_ = root.empty() ? tree.mount_ + "/allox" : root;
  auto* holder = mount_containing(*mounts, tree.root_);
  if (holder == nullptr || holder->fs_type != "cgroup2")
    return make_error(errc::invalid_argument,
                      "process cgroup root is not below a cgroup v2 mount: " +
                          tree.root_);
  if (tree.root_ == holder->mount_point)
    return make_error(errc::invalid_argument,
                      "use a dedicated cgroup subtree, not the mount root: " +
                          tree.root_);
  tree.mount_ = holder->mount_point;
  if (auto err = make_dirs(tree.root_))
    return err;
  if (::access((tree.root_ + "/cgroup.kill").c_str(), W_OK) != 0)
    return make_error(errc::unsupported,
                      "Session execution requires cgroup v2 cgroup.kill "
                      "(Linux 5.14+)");
  return tree;
}

std::string cgroup_tree::agent_group(const std::string& a) const {
  return root_ + "/agents/" + a;
}

std::string cgroup_tree::session_group(const std::string& a,
                                       const std::string& s) const {
  return agent_group(a) + "/sessions/" + s;
}

std::vector<std::string> cgroup_tree::controllers() const {
  std::vector<std::string> out;
  std::istringstream in{read_small(root_ + "/cgroup.controllers")};
  for (std::string c; in >> c;)
    out.push_back(c);
  return out;
}

caf::error prepare_group(const std::string& group) {
  if (auto err = make_dirs(group))
    return err;
  if (populated(group))
    return make_error(errc::conflict, "Session cgroup already contains "
                                      "processes; recover it before launch");
  return caf::none;
}

expected<unique_fd> open_group(const std::string& group) {
  unique_fd fd{::open(group.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
  if (!fd)
    return sys_error("open " + group);
  return fd;
}

bool populated(const std::string& group) {
  auto text = read_small(group + "/cgroup.events");
  auto pos = text.find("populated ");
  return pos != std::string::npos && text.compare(pos + 10, 1, "1") == 0;
}

caf::error kill_group(const std::string& group) {
  auto path = group + "/cgroup.kill";
  unique_fd fd{::open(path.c_str(), O_WRONLY | O_CLOEXEC)};
  if (!fd)
    return errno == ENOENT ? caf::none : sys_error("open " + path);
  if (::write(fd.get(), "1", 1) != 1)
    return sys_error("write " + path);
  return caf::none;
}

bool wait_empty(const std::string& group, int timeout_ms) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto events = group + "/cgroup.events";
  for (;;) {
    if (!populated(group))
      return true;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0)
      return false;
    // cgroup.events signals a change of `populated` as POLLPRI.
    unique_fd fd{::open(events.c_str(), O_RDONLY | O_CLOEXEC)};
    if (!fd)
      return !populated(group);
    char buf[256];
    (void)::read(fd.get(), buf, sizeof(buf));
    if (!populated(group))
      return true;
    pollfd pfd{fd.get(), POLLPRI, 0};
    ::poll(&pfd, 1, static_cast<int>(std::min<long>(left, 1000)));
  }
}

namespace {

/// Whether cgroup.events has `<key> 1`.
bool event_flag(const std::string& group, const char* key) {
  auto text = read_small(group + "/cgroup.events");
  auto needle = std::string{key} + " 1";
  auto pos = text.find(needle);
  return pos != std::string::npos && (pos == 0 || text[pos - 1] == '\n');
}

} // namespace

expected<frozen_group> frozen_group::freeze(const std::string& group,
                                            int timeout_ms) {
  if (auto err = write_control(group, "cgroup.freeze", "1")) {
    // The runs ended and took their group with them meanwhile: there is
    // nothing left to freeze.
    if (::access(group.c_str(), F_OK) != 0 && errno == ENOENT)
      return frozen_group{std::string{}};
    return err;
  }
  frozen_group held{group}; // thaws if we give up below
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto events = group + "/cgroup.events";
  for (;;) {
    // cgroup.events signals a change of `frozen` as POLLPRI; read, check,
    // then wait, so a change between the two is not missed.
    unique_fd fd{::open(events.c_str(), O_RDONLY | O_CLOEXEC)};
    if (!fd)
      return sys_error("open " + events);
    char buf[256];
    (void)::read(fd.get(), buf, sizeof(buf));
    if (event_flag(group, "frozen"))
      return held;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0)
      return make_error(errc::conflict,
                        "the run's processes did not freeze within " +
                            std::to_string(timeout_ms) + " ms");
    // The kernel sends at most one notification per file every 10 ms
    // (CGROUP_FILE_NOTIFY_MIN_INTV) and defers the rest by a timer, so
    // after the previous checkpoint's thaw the `frozen 1` of this one can
    // arrive 10 ms late: look again every millisecond instead.
    pollfd pfd{fd.get(), POLLPRI, 0};
    ::poll(&pfd, 1, static_cast<int>(std::min<long>(left, 1)));
  }
}

frozen_group::~frozen_group() {
  if (!group_.empty())
    (void)write_control(group_, "cgroup.freeze", "0");
}

caf::error thaw_group(const std::string& group) {
  if (auto err = write_control(group, "cgroup.freeze", "0")) {
    if (::access(group.c_str(), F_OK) != 0 && errno == ENOENT)
      return caf::none;
    return err;
  }
  return caf::none;
}

bool freeze_requested(const std::string& group) {
  return read_small(group + "/cgroup.freeze").rfind('1', 0) == 0;
}

void remove_group(const std::string& group) {
  // Only this group: its parents belong to the agent, and a sibling may be
  // creating its own group below them right now.
  (void)::rmdir(group.c_str());
}

void remove_agent_groups(const cgroup_tree& tree, const std::string& agent) {
  auto group = tree.agent_group(agent);
  // Session groups left by runs that never emptied block these; leave
  // them for an operator rather than fail the deletion.
  (void)::rmdir((group + "/sessions").c_str());
  (void)::rmdir(group.c_str());
}

void enable_controller(const std::string& tree_root, const std::string& group,
                       const std::string& controller) {
  auto line = "+" + controller;
  auto dir = tree_root.substr(0, tree_root.rfind('/'));
  for (size_t pos = dir.size(); pos != std::string::npos && pos < group.size();
       pos = group.find('/', pos + 1)) {
    auto ancestor = group.substr(0, pos);
    unique_fd fd{::open((ancestor + "/cgroup.subtree_control").c_str(),
                        O_WRONLY | O_CLOEXEC)};
    if (fd)
      (void)::write(fd.get(), line.data(), line.size());
  }
}

caf::error write_control(const std::string& group, const std::string& file,
                         const std::string& value) {
  auto path = group + "/" + file;
  unique_fd fd{::open(path.c_str(), O_WRONLY | O_CLOEXEC)};
  if (!fd)
    return make_error(errc::unsupported,
                      "cgroup control not available: " + file);
  auto n = ::write(fd.get(), value.data(), value.size());
  if (n != static_cast<ssize_t>(value.size()))
    return sys_error("write " + path);
  return caf::none;
}

} // namespace allox::os
