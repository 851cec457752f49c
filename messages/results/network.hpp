// SPDX-License-Identifier: Apache-2.0
// Results of a session's network facet that are not JSON: a socket
// connected for a front (port.connect).
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>

#include <unistd.h>

#include <memory>
#include <utility>

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

} // namespace allox

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::socket_handle)
