// SPDX-License-Identifier: Apache-2.0
// Events a SESSION receives from its own helpers (run workers, its
// timers), as structs instead of positional tuples: the fields say what
// they are, and an absent value is absent rather than -1 or "".
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace allox::tracking {
struct event_batch; // tracking/events.hpp
} // namespace allox::tracking

namespace allox {

/// A run's first process is running in the session cgroup.
struct run_started {
  std::string run_id;
  int64_t pid = 0;
};

/// A run ended (or never started).
struct run_finished {
  std::string run_id;
  /// The root process's exit code; none when it never ran.
  caf::optional<int64_t> exit_code;
  /// The run's cgroup is empty: nothing of the run is left.
  bool cgroup_empty = true;
  /// Why the run failed to start or to finish cleanly; none when it did.
  caf::optional<std::string> error;
  /// Processes of the run the OOM killer killed (its group's memory.events;
  /// 0 without the memory controller).
  int64_t oom_kills = 0;
};

/// A run's timeout expired (a timer of the session).
struct run_timeout {
  std::string run_id;
};

/// A process.wait reached its timeout (a timer of the session).
struct wait_timeout {
  std::string run_id;
  uint64_t waiter = 0;
};

/// A session lifted the fence of its interrupted runs (session.unfence):
/// its AGENT stops handing them to the session's next actor.
struct fence_lifted {
  std::string session_id;
};

// -- process tracking (the TRACKER and the sessions' tracking facet) ---------

/// What a process event of a tracked run records. The values are the
/// kernel's record types, pinned by `enum allox_event_type` in
/// bpf/process.h (the TRACKER checks they agree): an event keeps its kind
/// as this number until a front or the run's event log renders it.
enum class process_event_kind : uint8_t {
  /// A process of the run forked a new one (ALLOX_EVENT_FORK).
  fork = 1,
  /// A process replaced its program (ALLOX_EVENT_EXEC).
  exec = 2,
  /// A process ended (ALLOX_EVENT_EXIT).
  exit = 3,
};

/// The kind's wire name: "fork", "exec" or "exit".
constexpr std::string_view to_string(process_event_kind k) {
  switch (k) {
  case process_event_kind::fork:
    return "fork";
  case process_event_kind::exec:
    return "exec";
  case process_event_kind::exit:
    return "exit";
  }
  return "unknown";
}

/// One process event of a tracked run, as the TRACKER hands it to the
/// session that owns the run (decoded from the kernel's record).
struct process_record {
  /// The run (its row's `cookie`).
  uint64_t cookie = 0;
  /// The kernel's per-run sequence number; a gap is a lost event.
  uint64_t kernel_seq = 0;
  process_event_kind kind = process_event_kind::fork;
  /// CLOCK_BOOTTIME ns.
  uint64_t time_ns = 0;
  /// Guest pids (init namespace): the process, its parent (fork), the
  /// thread (exec: the thread that called exec; exit: the last thread).
  uint32_t pid = 0;
  uint32_t ppid = 0;
  uint32_t tid = 0;
  /// "<boot id>:<start ns>:<pid>": the process for good (pid reuse, exec).
  std::string process_id;
  /// The parent's process id (fork only).
  std::string parent_process_id;
  /// The run's root process (the first seen in its cgroup).
  bool root = false;
  std::string comm;
  /// exec only.
  std::string filename;
  /// exit only: the code when it exited, the signal when one killed it.
  caf::optional<int64_t> exit_code;
  caf::optional<int64_t> signal;
};

/// The events of one reader batch that belong to one session's runs, in
/// ring-buffer order: one message per batch and session.
struct process_event_batch {
  std::vector<process_record> events;
};

/// A change to a file by a process of one of the session's runs (write
/// provenance, bpf/write_provenance.bpf.h): by inode, or by name.
struct write_record {
  /// The run (its row's `cookie`).
  uint64_t cookie = 0;
  /// CLOCK_BOOTTIME ns.
  uint64_t time_ns = 0;
  /// "<boot id>:<start ns>:<pid>", and the pid and thread.
  std::string process_id;
  uint32_t pid = 0;
  uint32_t tid = 0;
  /// enum allox_write_op.
  uint32_t op = 0;
  /// The Btrfs subvolume; by inode: the inode changed. By name: the
  /// directory the path is relative to (subvol 0: not on Btrfs).
  uint64_t subvol = 0;
  uint64_t ino = 0;
  /// By name only: the path as the process gave it.
  bool by_name = false;
  std::string path;
  bool absolute = false;
};

/// The write records of one reader batch that belong to one session's
/// runs, and the write records the kernel lost for its runs since the
/// last batch (cookie, count), when any were.
struct write_record_batch {
  std::vector<write_record> records;
  std::vector<std::pair<uint64_t, uint64_t>> lost;
};

/// The TRACKER cannot vouch for these runs' traces any more (events lost,
/// or the reader or probe failed): the session fails and fences them.
struct tracking_failure {
  std::vector<uint64_t> cookies;
  std::string reason;
  /// Events lost per cookie, as far as the kernel counted them.
  std::vector<uint64_t> lost;
};

/// A run's final counters, once the TRACKER drained and untracked it.
struct trace_summary {
  /// Records the kernel submitted for the run.
  uint64_t produced = 0;
  /// Events the TRACKER received and handed to the session.
  uint64_t received = 0;
  /// Records lost in the kernel, plus those that never arrived before
  /// the drain deadline.
  uint64_t lost = 0;
  /// Every submitted record arrived before the deadline.
  bool drained = false;
};

/// A batch from the TRACKER's reader thread (local only, never
/// serialized): the probe generation it was read from, and the batch.
struct reader_batch {
  uint64_t generation = 0;
  std::shared_ptr<const tracking::event_batch> batch;
};

/// The TRACKER's reader thread stopped on an error.
struct reader_failed {
  uint64_t generation = 0;
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reader_failed& x) {
  return f(caf::meta::type_name("reader_failed"), x.generation, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_record& x) {
  return f(caf::meta::type_name("process_record"), x.cookie, x.kernel_seq,
           x.kind, x.time_ns, x.pid, x.ppid, x.tid, x.process_id,
           x.parent_process_id, x.root, x.comm, x.filename, x.exit_code,
           x.signal);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_event_batch& x) {
  return f(caf::meta::type_name("process_event_batch"), x.events);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_record& x) {
  return f(caf::meta::type_name("write_record"), x.cookie, x.time_ns,
           x.process_id, x.pid, x.tid, x.op, x.subvol, x.ino, x.by_name, x.path,
           x.absolute);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_record_batch& x) {
  return f(caf::meta::type_name("write_record_batch"), x.records, x.lost);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tracking_failure& x) {
  return f(caf::meta::type_name("tracking_failure"), x.cookies, x.reason,
           x.lost);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, trace_summary& x) {
  return f(caf::meta::type_name("trace_summary"), x.produced, x.received,
           x.lost, x.drained);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fence_lifted& x) {
  return f(caf::meta::type_name("fence_lifted"), x.session_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_started& x) {
  return f(caf::meta::type_name("run_started"), x.run_id, x.pid);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_finished& x) {
  return f(caf::meta::type_name("run_finished"), x.run_id, x.exit_code,
           x.cgroup_empty, x.error, x.oom_kills);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_timeout& x) {
  return f(caf::meta::type_name("run_timeout"), x.run_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wait_timeout& x) {
  return f(caf::meta::type_name("wait_timeout"), x.run_id, x.waiter);
}

} // namespace allox

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::reader_batch)
