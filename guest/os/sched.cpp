// SPDX-License-Identifier: Apache-2.0
#include "guest/os/sched.hpp"

#include <cerrno>
#include <cstring>
#include <sched.h>
#include <string>

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

} // namespace allox::os
