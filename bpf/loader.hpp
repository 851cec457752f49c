// SPDX-License-Identifier: Apache-2.0
// User space of the process tracker: the process_probe owns the BPF
// skeleton (open, settings, load, attach) and the maps that tell the
// kernel side which cgroups belong to which run. No actors here; errors
// come back as values whose message names the step that failed.
#pragma once

#include "bpf/process.h"
#include "guest/faults.hpp"
#include "guest/os/unique_fd.hpp"
#include "messages/errors.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

struct allox_process; // the generated skeleton (bpf/process.skel.h)

namespace allox::bpf {

/// Settings fixed when the probe is loaded.
struct probe_options {
  /// Ring buffer size in bytes: a power of two, at least one page.
  uint32_t ring_bytes = 256 * 1024;
  /// Processes of all tracked runs alive at the same time.
  uint32_t max_tasks = 65536;
  /// Runs (and tracked cgroups) at the same time.
  uint32_t max_runs = 4096;
  /// 0: the kernel wakes the reader for the first record after it caught
  /// up (lowest latency). Otherwise only once this many bytes wait; the
  /// reader finds fewer at its next poll timeout. Saves most of a tracked
  /// event's cost in a VM (docs/benchmarks.md), adds up to a poll timeout
  /// of latency. Must be below ring_bytes.
  uint32_t wakeup_bytes = 0;
  /// The BPF programs bpf_printk every loss.
  bool debug = false;
  /// Write provenance: the programs that record which process of a run
  /// changed which file (bpf/write_provenance.bpf.h). When the kernel cannot
  /// load or attach them, the probe runs without them (writes_error() says
  /// why).
  bool writes = true;
  /// (process, inode, op) entries remembered to send each record once per
  /// write generation (an LRU map: more only costs records).
  uint32_t max_write_keys = 65536;
  /// Fault point "tracking.probe.load": fires before the object is opened;
  /// `throw` makes open() fail as a failed load would.
  fault_set faults;
};

/// Records the kernel could not deliver, by cause (enum allox_loss_cause),
/// summed over the CPUs.
struct loss_counters {
  std::array<uint64_t, ALLOX_LOSS_CAUSES> by_cause{};

  uint64_t total() const;
  bool operator==(const loss_counters& other) const {
    return by_cause == other.by_cause;
  }
  bool operator!=(const loss_counters& other) const {
    return !(*this == other);
  }
};

/// Stable name of a loss cause ("ringbuf_fork", "tasks_full", ...).
std::string_view loss_cause_name(size_t cause);

/// Time the kernel spent in one program (counted only while BPF run-time
/// statistics are on: sysctl kernel.bpf_stats_enabled, or an
/// enable_run_time_stats() handle).
struct program_stats {
  std::string name;
  uint64_t runs = 0;
  uint64_t run_ns = 0;
};

/// Turns BPF run-time statistics on for as long as the fd is open.
expected<os::unique_fd> enable_run_time_stats();

/// One run's counters in the kernel.
struct run_counters {
  /// Sequence numbers handed out: delivered or lost.
  uint64_t sequences = 0;
  /// Records submitted to the ring buffer.
  uint64_t produced = 0;
  /// Records of this run that were lost.
  uint64_t lost = 0;
  /// The run's root process, 0 while none was seen.
  uint32_t root_tgid = 0;
  /// Write records handed out (delivered or lost), and those lost.
  uint64_t write_sequences = 0;
  uint64_t writes_lost = 0;
};

/// One write-provenance program and whether it runs.
struct write_hook {
  /// "tp_btf/sys_enter", ...
  std::string name;
  bool attached = false;
};

/// The loaded and attached BPF programs and their maps. Thread-safe:
/// track/untrack from any thread while a ring_reader consumes the ring.
class process_probe {
public:
  /// Opens the skeleton, applies `opts`, loads and attaches the three
  /// programs. Needs root (CAP_BPF + CAP_PERFMON), kernel BTF and BPF ring
  /// buffers.
  static expected<std::unique_ptr<process_probe>> open(probe_options opts = {});

  process_probe(const process_probe&) = delete;
  process_probe& operator=(const process_probe&) = delete;
  ~process_probe();

  /// Starts attributing processes in the cgroup `cgroup_id` to `cookie`
  /// (non-zero). Call it before the run's first process exists. A run may
  /// span several cgroups; a cgroup belongs to one run at a time.
  caf::error track(uint64_t cgroup_id, uint64_t cookie);

  /// Stops tracking the cgroup. When it was the run's last one, the run's
  /// processes and counters are dropped from the kernel and the final
  /// counters returned (read them, and drain the ring, before: records
  /// still in the ring then carry an unknown cookie).
  expected<run_counters> untrack(uint64_t cgroup_id);

  /// Whether `cookie` is a tracked run (the reader's check of every record).
  bool knows(uint64_t cookie) const;

  /// The kernel's counters of a tracked run.
  expected<run_counters> counters(uint64_t cookie) const;

  /// Losses by cause since load.
  expected<loss_counters> losses() const;

  /// Live processes the kernel attributes to `cookie` (a map walk; for
  /// checks and tests).
  size_t live_processes(uint64_t cookie) const;

  /// Calls and run time of the fork, exec and exit programs, and of the
  /// write-provenance programs that are loaded.
  std::vector<program_stats> stats() const;

  /// The ring buffer map, for ring_buffer__new.
  int ring_fd() const;

  /// The reader gathers a batch and leaves records in the ring until it is
  /// due (on) or reads as they come (off). While on, the programs wake it
  /// only once a quarter of the ring is in use (unless wakeup_bytes is
  /// set, which always rules). Any thread; no system call.
  void set_reader_batching(bool on);

  /// Whether write records are produced (some write hook is attached).
  bool writes_on() const { return writes_on_; }
  /// Why write provenance is off or partial ("" when every hook runs).
  const std::string& writes_error() const { return writes_error_; }
  /// Every write hook and whether it is attached.
  const std::vector<write_hook>& write_hooks() const { return write_hooks_; }

  /// Starts a new write generation: every (process, inode, op) is
  /// recorded again from now on. A session calls it through the TRACKER
  /// when it seals a write set. Any thread; no system call.
  uint64_t next_write_generation();

  /// Whether the kernel passes sched_process_exit its `group_dead`
  /// argument (otherwise the program reads signal->live).
  bool exit_has_group_dead() const { return group_dead_arg_; }

  const probe_options& options() const { return opts_; }

  /// Entries of the tasks map read per system call by each_task.
  static constexpr size_t task_batch = 256;

private:
  process_probe() = default;

  /// Opens, sizes, loads and attaches the object (again), with the write
  /// hooks when `writes`, except those the kernel lacks.
  caf::error load(bool writes, const std::vector<std::string>& missing);

  /// Calls `f(tgid, task)` for every entry of the tasks map, read in
  /// batches of task_batch.
  void
  each_task(const std::function<void(uint32_t, const allox_task&)>& f) const;

  allox_process* skel_ = nullptr;
  probe_options opts_;
  bool group_dead_arg_ = false;
  bool writes_on_ = false;
  std::string writes_error_;
  std::vector<write_hook> write_hooks_;
  mutable std::mutex mtx_;
  std::unordered_map<uint64_t, uint64_t> cgroups_; // cgroup id -> cookie
  std::unordered_map<uint64_t, uint32_t> runs_;    // cookie -> cgroups
};

/// The id of a cgroup v2 directory as the kernel reports it
/// (bpf_get_current_cgroup_id, kernfs node id).
expected<uint64_t> cgroup_id(const std::string& path);

/// The BTF tracepoint typedefs the probe attaches to.
inline constexpr std::array<std::string_view, 3> tracepoint_types = {
    "btf_trace_sched_process_fork", "btf_trace_sched_process_exec",
    "btf_trace_sched_process_exit"};

} // namespace allox::bpf
