// SPDX-License-Identifier: Apache-2.0
// Process events of tracked runs as user space sees them: decoded from
// the kernel's records (bpf/process.h) into plain C++ values.
#pragma once

#include "bpf/loader.hpp"
#include "bpf/write_ops.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace allox::tracking {

/// A process that pid reuse cannot confuse with another: its pid (thread
/// group id) and its start time (CLOCK_BOOTTIME ns). With the boot id it
/// names the process for good.
struct process_identity {
  uint64_t start_ns = 0;
  uint32_t tgid = 0;

  /// "<boot id>:<start ns>:<tgid>"
  std::string str(std::string_view boot_id) const;

  bool operator==(const process_identity& other) const {
    return start_ns == other.start_ns && tgid == other.tgid;
  }
  bool operator!=(const process_identity& other) const {
    return !(*this == other);
  }
};

/// What every event has.
struct event_header {
  /// The run.
  uint64_t cookie = 0;
  /// Per run, from 1; a gap is an event the kernel could not deliver.
  uint64_t seq = 0;
  /// CLOCK_BOOTTIME ns.
  uint64_t time_ns = 0;
  uint32_t cpu = 0;
  /// The run's root process (first seen in a tracked cgroup).
  bool root = false;
  /// The process the event is about.
  process_identity process;
};

/// A new process of the run (never a thread).
struct fork_event {
  event_header hdr;
  process_identity parent;
  /// The parent's thread that forked.
  uint32_t parent_tid = 0;
  std::string comm;
};

/// A successful exec.
struct exec_event {
  event_header hdr;
  /// The thread that called exec; differs from the pid when a non-leader
  /// thread exec'd (the process keeps its identity).
  uint32_t former_tid = 0;
  std::string comm;
  std::string filename;
  bool filename_truncated = false;
};

/// The process ended (its last thread exited).
struct exit_event {
  event_header hdr;
  uint32_t tid = 0;
  /// The kernel's wait status: exit code << 8 | terminating signal.
  uint32_t status = 0;
  std::string comm;

  /// The exit code, when the process exited rather than being killed.
  std::optional<int> exit_code() const;
  /// The signal that killed it, if one did.
  std::optional<int> signal() const;
  bool core_dumped() const { return (status & 0x80) != 0; }
};

/// A change to a file on Btrfs by a process of the run (write provenance).
/// Its header's seq is the run's write sequence, apart from the process
/// events' one.
struct write_event {
  event_header hdr;
  /// The Btrfs subvolume (tree) id and the inode in it.
  uint64_t subvol = 0;
  uint64_t ino = 0;
  /// enum allox_write_op.
  uint32_t op = 0;
  /// The thread that did it.
  uint32_t tid = 0;
};

/// A successful change by name (unlink, rename, link, or truncate, chmod,
/// utimes by path): the path as the process gave it, and the directory it
/// is relative to. Its seq is the run's write sequence too.
struct write_path_event {
  event_header hdr;
  /// The directory: the Btrfs subvolume (0 when the directory is not on
  /// Btrfs, a sandbox's root) and its inode.
  uint64_t subvol = 0;
  uint64_t dir_ino = 0;
  /// enum allox_write_op.
  uint32_t op = 0;
  uint32_t tid = 0;
  std::string path;
  /// The path is absolute (the directory is the process's root).
  bool absolute = false;
  /// The path filled the kernel's buffer and may be cut short.
  bool truncated = false;
};

using process_event = std::variant<fork_event, exec_event, exit_event,
                                   write_event, write_path_event>;

/// The header of any event.
const event_header& header_of(const process_event& e);

/// "fork", "exec", "exit", "write" or "write_path".
std::string_view kind_name(const process_event& e);

/// Whether the event is a process event (fork, exec, exit), which the
/// run's process sequence counts, rather than a write record.
inline bool is_process_event(const process_event& e) {
  return !std::holds_alternative<write_event>(e) &&
         !std::holds_alternative<write_path_event>(e);
}

using bpf::write_op_name;

/// Records user space refused, by reason.
struct decode_counters {
  /// Shorter than its header or its type's layout.
  uint64_t truncated = 0;
  /// Another ABI version.
  uint64_t bad_abi = 0;
  /// A record type this build does not know.
  uint64_t unknown_type = 0;
  /// The header's size disagrees with the record or its type.
  uint64_t size_mismatch = 0;
  /// A run that is not (or no longer) tracked.
  uint64_t unknown_cookie = 0;

  uint64_t total() const {
    return truncated + bad_abi + unknown_type + size_mismatch + unknown_cookie;
  }
};

/// What the reader has seen so far; every batch carries a copy.
struct reader_counters {
  /// Records decoded into events.
  uint64_t received = 0;
  decode_counters decode_errors;
  /// The kernel's losses by cause, read with the batch.
  bpf::loss_counters kernel_losses;
};

/// Events handed over together, in ring-buffer order.
struct event_batch {
  std::vector<process_event> events;
  reader_counters counters;
  /// /proc/sys/kernel/random/boot_id, for process_identity::str.
  std::string boot_id;
};

/// This boot's id (/proc/sys/kernel/random/boot_id); empty if unreadable.
std::string read_boot_id();

} // namespace allox::tracking
