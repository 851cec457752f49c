// SPDX-License-Identifier: Apache-2.0
// The typed results of session.pause, session.resume and session.usage.
// Their native JSON is written once, in messages/results/pause_json.hpp.
#pragma once

#include "messages/records.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace allox {

/// session.pause: the checkpoint of the paused files and what happened to
/// the processes.
struct pause_result {
  std::string agent_id;
  std::string session_id;
  /// The checkpoint taken while the processes were held (origin "pause").
  checkpoint_row checkpoint;
  /// The processes were frozen in memory (else their runs were stopped).
  bool kept_memory = true;
  /// The runs frozen (kept_memory) or stopped.
  std::vector<std::string> runs;
};

/// session.resume: the runs thawed.
struct resume_result {
  std::string agent_id;
  std::string session_id;
  std::vector<std::string> runs;
};

/// session.usage: what the session uses now. CPU and processes come from
/// its cgroup (cpu.stat exists without any controller); memory from
/// memory.current where the memory controller reaches the group, else the
/// resident sets of its processes.
struct usage_report {
  std::string agent_id;
  std::string session_id;
  /// Unix nanoseconds of the reading.
  int64_t sampled_ns = 0;
  bool paused = false;
  /// Live runs.
  uint32_t runs = 0;
  /// Processes in the session's cgroup (and below).
  uint32_t processes = 0;
  /// CPU time of the live runs' processes, microseconds (cpu.stat).
  int64_t cpu_usage_usec = 0;
  int64_t cpu_user_usec = 0;
  int64_t cpu_system_usec = 0;
  /// Bytes of memory in use: memory.current, or the processes' VmRSS sum.
  int64_t memory_bytes = 0;
  /// "cgroup" or "processes".
  std::string memory_source = "processes";
  /// The memory the session may use: its memory.max, else the VM's RAM.
  int64_t memory_total_bytes = 0;
  /// memory.peak and pids.current, where those controllers exist.
  caf::optional<int64_t> memory_peak_bytes;
  caf::optional<int64_t> pids_current;
  /// memory.events oom_kill and pids.events max, as session_counters.
  caf::optional<int64_t> oom_kills;
  caf::optional<int64_t> pids_refused;
  /// Bytes allocated to current/'s files (st_blocks), and the store's
  /// size and free space (statvfs).
  int64_t disk_used_bytes = 0;
  int64_t disk_total_bytes = 0;
  int64_t disk_free_bytes = 0;
};

} // namespace allox

// Local messages only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::pause_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::resume_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::usage_report)
