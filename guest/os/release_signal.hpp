// SPDX-License-Identifier: Apache-2.0
// A one-shot signal that any number of threads can wait on with poll: an
// eventfd written once and never read stays readable for all of them.
// The daemon's orderly stop under --live-restore raises a session's, and
// the threads that follow its runs let go of runs that go on without the
// daemon (actors/session/adoption.cpp).
#pragma once

#include "guest/os/unique_fd.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace allox::os {

class release_signal {
public:
  release_signal() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

  /// Wakes every waiter, now and later.
  void raise() {
    uint64_t one = 1;
    (void)!::write(fd_.get(), &one, sizeof one);
  }

  bool raised() const {
    pollfd p{fd_.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }

  /// Readable once raised (-1 if the eventfd could not be made).
  int fd() const { return fd_.get(); }

private:
  unique_fd fd_;
};

} // namespace allox::os
