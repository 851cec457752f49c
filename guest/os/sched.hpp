// SPDX-License-Identifier: Apache-2.0
// CPU scheduling of the daemon's own threads, and how the OOM killer
// sees the daemon.
#pragma once

#include "messages/errors.hpp"

namespace allox::os {

/// Puts the calling thread under SCHED_BATCH. It still gets its full share
/// of the CPU, but when it wakes up it does not preempt the thread running
/// on that CPU. For threads whose work is queued by a request that is about
/// to be answered (the catalog's commits): on two vCPUs their wake-up would
/// otherwise run ahead of the reply.
caf::error use_batch_scheduling();

/// Whether the thread with id `tid` (0: the calling one) is under
/// SCHED_BATCH.
bool uses_batch_scheduling(int tid = 0);

/// This process's oom_score_adj (-1000..1000; 0 when unreadable), as its
/// unit set it: the guest's protects the daemon, whose runs start at 0.
int own_oom_score_adj();

} // namespace allox::os
