// SPDX-License-Identifier: Apache-2.0
// How far a TCP peer is behind: the bytes we queued that it has not
// acknowledged. poll(2) says a socket takes more only once a third of its
// send buffer is free; this moves with every segment the peer takes.
#pragma once

#include <linux/sockios.h>
#include <sys/ioctl.h>

namespace allox::os {

/// Bytes queued on `sock` (sent or not) that the peer has not
/// acknowledged; -1 when the socket cannot say.
inline int unacknowledged(int sock) {
  int n = 0;
  return ::ioctl(sock, SIOCOUTQ, &n) == 0 ? n : -1;
}

} // namespace allox::os
