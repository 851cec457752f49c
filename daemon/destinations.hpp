// SPDX-License-Identifier: Apache-2.0
// What runs may never reach, and the two places that enforce it: the
// connect guard (cgroup connect programs on the runs' subtree, bpf/) and
// the egress broker of proxy mode (guest/net/broker.hpp), both from one
// list built from the daemon's flags.
#pragma once

#include "daemon/options.hpp"
#include "guest/net/egress_rules.hpp"
#include "messages/errors.hpp"

#include <memory>
#include <string>
#include <vector>

#if ALLOX_TRACKING
#include "bpf/connect_guard.hpp"
#endif

namespace allox::daemon {

#if ALLOX_TRACKING
using guard_handle = std::unique_ptr<bpf::connect_guard>;
#else
using guard_handle = std::unique_ptr<int>;
#endif

/// The destinations no run may reach, as rule texts ("127.0.0.1:8092",
/// "[::1]:*"): the RPC and metrics addresses (every address of the
/// machine for a wildcard) and --deny-connect.
expected<std::vector<std::string>> refused_destinations(const options& opts);

/// What the egress broker never connects to, whatever a session's policy:
/// the refused destinations, loopback standing for all of 127.0.0.0/8.
expected<std::vector<net::rule>> daemon_destinations(const options& opts);

/// Attaches the connect guard to the cgroup subtree at `cgroup_root`
/// (empty handle with --connect-guard off).
expected<guard_handle> guard_connections(const options& opts,
                                         const std::string& cgroup_root);

} // namespace allox::daemon
