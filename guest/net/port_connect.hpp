// SPDX-License-Identifier: Apache-2.0
// Reaching a port a session's process listens on, as that process would
// reach it: 127.0.0.1 (then ::1) inside the network namespace the process
// is in. A session's runs share the daemon's namespace (network
// `inherit`), share one namespace of their own (`proxy`), or each have
// their own (`isolated`); the namespaces are found from the processes in
// the session's cgroup, so every mode is served the same way.
//
// Blocking (cgroupfs, /proc, a short-lived thread per foreign namespace):
// call from a worker.
#pragma once

#include "guest/os/unique_fd.hpp"
#include "messages/errors.hpp"

#include <cstdint>
#include <string>

namespace allox::net {

/// A connected, non-blocking TCP socket to `port` in the first namespace
/// of the processes of cgroup `group` (and its children) where something
/// accepts; `first_ns` (a namespace fd, or -1) is tried before them. The
/// daemon's own namespace is tried only with `own_namespace` (the runs
/// share it): a run's launcher stays there while the run is in a
/// namespace of its own, and a port there may be anyone's. not_found when
/// nothing listens.
/// `group` is a path beneath the cgroup v2 `mount`. A port that does not
/// accept within 3 s counts as nothing listening.
expected<os::unique_fd> connect_in_group(const std::string& mount,
                                         const std::string& group,
                                         uint16_t port, bool own_namespace,
                                         int first_ns = -1);

} // namespace allox::net
