// SPDX-License-Identifier: Apache-2.0
// What a session's runs changed, interval by interval: the write records
// the TRACKER hands the session (bpf/write_provenance.bpf.h), kept for the
// live interval since the last checkpoint and sealed with each checkpoint,
// so that a diff between two checkpoints can name the run and the process
// behind each change. Plain data and logic (no actor): the session's
// writes facet (writes.cpp) owns one.
#pragma once

#include "messages/errors.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace allox {

/// One process of a run that changed a file in an interval, or the daemon
/// itself serving a request (file.write, an upload, share): then `run_id`
/// is empty and `action`/`origin` name the request.
struct file_writer {
  std::string run_id;
  std::string process_id;
  uint32_t pid = 0;
  /// Bit (1 << op) for each enum allox_write_op seen.
  uint32_t ops = 0;
  /// CLOCK_BOOTTIME of its first and last record in the interval.
  uint64_t first_ns = 0;
  uint64_t last_ns = 0;
  std::string action;
  std::string origin;
};

/// A change by name (unlink, rename, link, by-path truncate or chmod):
/// the path as the process gave it and the directory it is relative to,
/// resolved when a diff asks.
struct named_change {
  /// The directory (subvol 0: not on Btrfs, a sandbox's root).
  uint64_t subvol = 0;
  uint64_t dir_ino = 0;
  std::string path;
  bool absolute = false;
  file_writer writer;
  /// Every path beneath `path` too (the daemon unpacking a tar there).
  bool subtree = false;
};

/// What the session's runs changed between two checkpoints (or since the
/// last one).
struct write_interval {
  /// Inode in the session's workspace -> its writers.
  std::map<uint64_t, std::vector<file_writer>> by_inode;
  std::vector<named_change> by_name;
  /// Write records the kernel lost in the interval: its changes that no
  /// record explains read `unattributed: "loss"`.
  uint64_t lost = 0;
  /// Its records begin after it did (the daemon restarted within it): a
  /// change no record explains reads `unattributed: "not_recorded"`.
  bool partial = false;

  /// The command of each run and the last program of each process named
  /// above, kept with the interval so that a diff names them after the
  /// runs are gone (filled when the interval is sealed).
  std::map<std::string, std::vector<std::string>> commands;
  std::map<std::string, std::string> exes;

  /// Adds one record's writer of an inode (merged with the same process's
  /// earlier ones).
  void add(uint64_t ino, const file_writer& w);
  /// Adds one change by name.
  void add(const named_change& c);
  bool empty() const { return by_inode.empty() && by_name.empty(); }
};

/// The interval as the catalog keeps it (JSON text), and back; a body
/// that does not decode is an error, never a partial interval.
std::string encode(const write_interval& i);
expected<write_interval> decode_write_interval(const std::string& body);

/// The live interval and the sealed ones, by checkpoint id.
class write_sets {
public:
  /// A record that happened at `time_ns`: to the last sealed interval when
  /// it happened before that checkpoint's snapshot ended (it may arrive
  /// after the seal: the reader batches), to the live one when it happened
  /// after the snapshot began (during it: both).
  void add(uint64_t time_ns, uint64_t ino, const file_writer& w);
  void add(uint64_t time_ns, const named_change& c);
  /// Write records lost (counted in the live interval, and the last sealed
  /// one: which of the two they belonged to is unknown).
  void lose(uint64_t count, bool in_last_sealed_too);

  /// Seals the live interval as checkpoint `id`, whose snapshot was taken
  /// between `begin_ns` and `end_ns` (CLOCK_BOOTTIME). Writers seen only
  /// after the snapshot move on to the new live interval; those seen
  /// during it stay in both.
  void seal(const std::string& id, uint64_t begin_ns, uint64_t end_ns);
  /// Starts a fresh live interval (rollback, fork): nothing written before
  /// belongs to the tree that follows.
  void restart();
  /// The live interval lost its earlier records (a restart).
  void mark_partial() { live_.partial = true; }
  /// A deleted checkpoint's interval goes into its children's (whose
  /// intervals now start where it started).
  void drop(const std::string& id, const std::vector<std::string>& children);
  /// Puts back an interval sealed before a restart (from the catalog);
  /// one sealed since is kept.
  void restore(const std::string& id, write_interval i);

  const write_interval& live() const { return live_; }
  /// The interval sealed with checkpoint `id`; null when there is none
  /// (taken before write provenance, or before a daemon restart).
  const write_interval* sealed(const std::string& id) const;
  write_interval* sealed(const std::string& id);
  size_t sealed_count() const { return sealed_.size(); }

private:
  /// Calls `add` with each interval a record of `time_ns` belongs to.
  template <class Add>
  void place(uint64_t time_ns, Add add);

  write_interval live_;
  std::map<std::string, write_interval> sealed_;
  /// The last sealed interval, and when its snapshot began and ended.
  std::string last_;
  uint64_t last_begin_ns_ = 0;
  uint64_t last_end_ns_ = 0;
};

/// Stable name of a write op bit ("write", "create", ...), in op order.
std::vector<std::string> write_op_names(uint32_t ops);

} // namespace allox
