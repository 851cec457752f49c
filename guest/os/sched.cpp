// SPDX-License-Identifier: Apache-2.0
#include "guest/os/sched.hpp"

#include "guest/os/unique_fd.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <string>
#include <unistd.h>

namespace allox::os {

caf::error use_batch_scheduling() {
  sched_param param{};
  // pid 0 is the calling thread, not the whole process.
  if (sched_setscheduler(0, SCHED_BATCH, &param) != 0)
    return make_error(errc::internal, std::string{"sched_setscheduler: "} +
                                          std::strerror(errno));
  return caf::none;
}

bool uses_batch_scheduling(int tid) {
  return sched_getscheduler(tid) == SCHED_BATCH;
}

int own_oom_score_adj() {
  unique_fd fd{::open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC)};
  if (!fd)
    return 0;
  char buf[16] = {};
  auto n = ::read(fd.get(), buf, sizeof buf - 1);
  return n > 0 ? std::atoi(buf) : 0;
}

} // namespace allox::os
