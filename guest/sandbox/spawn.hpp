// SPDX-License-Identifier: Apache-2.0
// Starting a run's first process directly inside its session cgroup with
// clone3(CLONE_INTO_CGROUP): no instant exists in which the process, or a
// child it forks, is outside the group. The configuration travels as argv
// (no pipe to a stopped child that a large argv could fill).
#pragma once

#include "guest/os/unique_fd.hpp"
#include "messages/errors.hpp"

#include <string>
#include <vector>

namespace allox::sandbox {

struct child {
  pid_t pid = -1;
  os::unique_fd pidfd;
};

/// Executes argv[0] (an absolute path) in the cgroup open at `cgroup_fd`,
/// stdin from `stdin_fd` (-1: /dev/null), stdout/stderr to the given fds,
/// with a minimal environment; in the network namespace open at
/// `netns_fd` when it is not -1 (a proxy session's). `status_fd`, when
/// not -1, is the child's fd sandbox::status_fd_number (our init writes
/// the final status there). The child does not die with the daemon.
expected<child> spawn_in_cgroup(int cgroup_fd,
                                const std::vector<std::string>& argv,
                                int stdin_fd, int stdout_fd, int stderr_fd,
                                int netns_fd = -1, int status_fd = -1);

/// What wait_child returns when `release_fd` became readable first.
inline constexpr int released = -2;

/// Blocks until the child exits; returns the exit code, or 128 + signal.
/// With `release_fd`, returns `released` as soon as that fd is readable
/// (the child goes on; nobody reaps it here).
int wait_child(const child& c, int release_fd = -1);

} // namespace allox::sandbox
