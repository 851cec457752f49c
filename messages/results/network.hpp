// SPDX-License-Identifier: Apache-2.0
// Results of a session's network facet: network.status (and
// network.configure, which answers with it) - the mode and, in proxy mode,
// the egress policy and the broker's counters, written as JSON once in
// messages/results/network_json.cpp - and a socket connected for a front
// (port.connect).
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace allox {

/// A connected socket handed from a worker to a front: the last copy
/// closes it unless it was taken. Local only (a descriptor of this
/// process).
class socket_handle {
public:
  socket_handle() = default;
  explicit socket_handle(int fd)
      : fd_(new int(fd), [](int* p) {
          if (*p >= 0)
            ::close(*p);
          delete p;
        }) {}

  /// The descriptor, now the caller's to close; -1 when none.
  int take() { return fd_ ? std::exchange(*fd_, -1) : -1; }

private:
  std::shared_ptr<int> fd_;
};

/// A proxy session's egress policy: hosts or networks let out, and kept in.
struct egress_lists {
  std::vector<std::string> allow;
  std::vector<std::string> deny;
};

/// The egress broker's counters of a session's namespace.
struct egress_connections {
  int64_t open = 0;
  int64_t total = 0;
  int64_t refused = 0;
  int64_t failed = 0;
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
};

/// network.status.
struct network_status_view {
  std::string agent_id;
  std::string session_id;
  /// "inherit", "isolated" or "proxy".
  std::string mode;
  /// Runs get the mode now: inherit always, the others once the session's
  /// namespace exists.
  bool active = false;
  /// Proxy mode: the proxy's URL inside runs and the egress policy.
  caf::optional<std::string> proxy_url;
  caf::optional<egress_lists> egress;
  /// The session's namespace at the broker, while it exists.
  caf::optional<int64_t> namespace_inode;
  caf::optional<egress_connections> connections;
};

} // namespace allox

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::socket_handle)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::network_status_view)
