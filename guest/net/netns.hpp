// SPDX-License-Identifier: Apache-2.0
// A session's own network namespace for `proxy` mode: only loopback, and
// the proxy's listening socket at 127.0.0.1:3128 inside it. The socket is
// created in the namespace but served by the broker's loop outside it (a
// socket keeps the namespace it was made in), so no process of ours runs
// inside. Runs join the namespace with setns before Bubblewrap starts.
#pragma once

#include "guest/os/unique_fd.hpp"
#include "messages/errors.hpp"

#include <cstdint>

namespace allox::net {

/// The proxy's address inside every proxy namespace.
inline constexpr const char* proxy_host = "127.0.0.1";
inline constexpr uint16_t proxy_port = 3128;

struct proxy_namespace {
  /// The namespace (/proc/thread-self/ns/net of its creator), for setns.
  os::unique_fd ns;
  /// Listening, non-blocking, at proxy_host:proxy_port inside it.
  os::unique_fd listener;
  /// The namespace's inode number, as `ls -l /proc/<pid>/ns/net` shows.
  uint64_t inode = 0;
};

/// Creates the namespace on a short-lived thread of its own (unshare
/// changes only the calling thread's namespace), brings `lo` up and
/// listens on the proxy port. About a millisecond.
expected<proxy_namespace> make_proxy_namespace(uint16_t port = proxy_port);

} // namespace allox::net
