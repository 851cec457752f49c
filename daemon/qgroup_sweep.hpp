// SPDX-License-Identifier: Apache-2.0
// With the store's quotas on, the qgroups of deleted checkpoints and
// replaced trees may outlive their subvolumes (kernels older than this
// machine's keep them), and each one left makes every later snapshot
// slower (guest/os/btrfs_quota.hpp); the disk groups of deleted sessions
// stay too. This timer removes them every interval: the loop thread arms
// it, libuv's thread pool sweeps, one sweep at a time. Store-wide, so that no
// deleting path (a session's purge, checkpoint.delete, start-up recovery, an
// operator's CLI) has to remember.
#pragma once

#include "guest/os/btrfs_quota.hpp"

#include <uv.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace allox::daemon {

class qgroup_sweep {
public:
  qgroup_sweep(uv_loop_t* loop, std::string root);
  qgroup_sweep(const qgroup_sweep&) = delete;
  qgroup_sweep& operator=(const qgroup_sweep&) = delete;

  void start(std::chrono::milliseconds interval);

  /// Closes the timer; a sweep in flight ends first (its work keeps the
  /// loop running). Safe to call again.
  void close();

private:
  uv_timer_t timer_{};
  uv_work_t work_{};
  std::string root_;
  bool busy_ = false;
  /// Written by the pool thread, read on the loop thread after it.
  os::qgroup_sweep_result last_;
  std::string error_;
  /// The disk groups the last sweep found empty; only the pool thread
  /// touches it, one sweep at a time.
  std::vector<uint64_t> empty_groups_;
};

} // namespace allox::daemon
