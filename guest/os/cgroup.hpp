// SPDX-License-Identifier: Apache-2.0
// cgroup v2 through cgroupfs: the session group is the membership set and
// the kill boundary of a session's runs. The v2 mount is found in
// /proc/self/mountinfo (on this kind of host it is /sys/fs/cgroup/unified,
// with no controllers enabled), never assumed.
#pragma once

#include "guest/os/unique_fd.hpp"
#include "messages/errors.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace allox::os {

/// The daemon's subtree of the cgroup v2 hierarchy.
class cgroup_tree {
public:
  /// `root` empty: "<v2 mount>/allox". Creates the subtree; refuses the
  /// mount root itself, paths outside a v2 mount, and kernels without
  /// cgroup.kill (Linux < 5.14).
  static expected<cgroup_tree> open(const std::string& root);

  const std::string& root() const { return root_; }
  const std::string& mount() const { return mount_; }

  /// <root>/agents/<a> (not created). It and its `sessions` child belong
  /// to the agent: created on demand by its sessions' runs, removed only
  /// when the agent is deleted.
  std::string agent_group(const std::string& a) const;

  /// <root>/agents/<a>/sessions/<s> (not created).
  std::string session_group(const std::string& a, const std::string& s) const;

  /// Controllers this subtree can use (from cgroup.controllers).
  std::vector<std::string> controllers() const;

private:
  std::string root_;
  std::string mount_;
};

/// Creates the group (and parents) if missing; refuses a populated one.
/// A parent removed concurrently by its owner is created again.
caf::error prepare_group(const std::string& group);

/// An O_PATH|O_DIRECTORY fd on the group, for clone3(CLONE_INTO_CGROUP).
expected<unique_fd> open_group(const std::string& group);

/// The `populated` flag of cgroup.events (covers nested groups); a missing
/// group is not populated.
bool populated(const std::string& group);

/// Writes 1 to cgroup.kill: SIGKILL to every process in the group and
/// below, atomically. A missing group is fine.
caf::error kill_group(const std::string& group);

/// Waits until the group is empty or `timeout_ms` passes (poll on
/// cgroup.events); true when empty.
bool wait_empty(const std::string& group, int timeout_ms);

/// Removes the group if it is empty; never its parents (see agent_group).
void remove_group(const std::string& group);

/// Removes an agent's own groups (`sessions` and the agent group) if they
/// are empty; called by the agent's deletion, once its sessions are gone.
void remove_agent_groups(const cgroup_tree& tree, const std::string& agent);

/// Enables a controller for `group` by writing +<controller> to the
/// cgroup.subtree_control of every ancestor from `tree_root` down.
/// Best effort: the writes fail where the controller is not available.
void enable_controller(const std::string& tree_root, const std::string& group,
                       const std::string& controller);

/// Writes `value` to <group>/<file> (limits such as memory.max).
caf::error write_control(const std::string& group, const std::string& file,
                         const std::string& value);

/// A group held frozen (cgroup.freeze) for the object's lifetime: every
/// process in it and below is stopped at a point where it can be thawed
/// unchanged, so a snapshot taken meanwhile is one instant of the run.
class frozen_group {
public:
  /// Writes 1 to cgroup.freeze and waits until cgroup.events says
  /// `frozen 1` (a task in an uninterruptible sleep may delay that);
  /// after `timeout_ms` the group is thawed again and it fails. A group
  /// that no longer exists (its runs ended) is nothing to freeze.
  static expected<frozen_group> freeze(const std::string& group,
                                       int timeout_ms);

  frozen_group(frozen_group&& other) noexcept
      : group_(std::move(other.group_)) {
    other.group_.clear();
  }
  frozen_group& operator=(frozen_group&&) = delete;
  frozen_group(const frozen_group&) = delete;
  frozen_group& operator=(const frozen_group&) = delete;
  /// Thaws.
  ~frozen_group();

  /// Leaves the group frozen past this object (a paused session holds it
  /// until thaw_group); returns its path, empty when nothing was frozen.
  std::string release() && { return std::exchange(group_, {}); }

private:
  explicit frozen_group(std::string group) : group_(std::move(group)) {}
  std::string group_;
};

/// Writes 0 to cgroup.freeze: the group's processes run again. A missing
/// group (its runs ended) is fine.
caf::error thaw_group(const std::string& group);

/// cgroup.freeze says 1: the group was frozen (by a pause) and not thawed.
bool freeze_requested(const std::string& group);

/// What a group's own control files count, read without walking the
/// groups below (the counts are hierarchical): cheap enough for every
/// session.describe and every scrape. Each count is there only where its
/// controller reaches the group, except cpu.stat.
struct group_counters {
  /// The group exists.
  bool present = false;
  /// cpu.stat usage_usec: CPU time of every process the group has held.
  int64_t cpu_usage_usec = 0;
  /// memory.current and memory.peak.
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> memory_peak_bytes;
  /// pids.current.
  std::optional<int64_t> pids_current;
  /// memory.events oom_kill: processes an OOM killer chose in the group.
  std::optional<int64_t> oom_kills;
  /// pids.events max: forks refused because the group was at pids.max.
  std::optional<int64_t> pids_refused;
};

/// Reads the counts of `group`'s own control files.
group_counters read_counters(const std::string& group);

/// Adds the counts of a group about to be removed to `total` (CPU time,
/// OOM kills, refused forks; the highest peak), so that a session's
/// counts outlive the group of its runs.
void add_retired(group_counters& total, const group_counters& gone);

/// The counts of a session: those retired, plus its live group's. With no
/// live group, what the session uses now is 0 where it was ever counted.
group_counters with_retired(group_counters live, const group_counters& retired);

/// What a group's processes use now (cgroup_usage.cpp): its counters,
/// and what only a walk of the groups below finds.
struct group_usage {
  /// The group's own counts (`counters.present`: the group exists).
  group_counters counters;
  /// Processes in the group and below (cgroup.procs).
  uint32_t processes = 0;
  /// cpu.stat, microseconds.
  int64_t cpu_user_usec = 0;
  int64_t cpu_system_usec = 0;
  /// memory.current (true) or the processes' VmRSS sum.
  bool memory_from_cgroup = false;
  int64_t memory_bytes = 0;
  /// memory.max when it is a number (a limit is set).
  std::optional<int64_t> memory_max_bytes;
};

/// Resident bytes of process `pid` ("self" for this one) from its statm;
/// 0 for one that is gone.
int64_t resident_bytes(const std::string& pid);

/// Reads cpu.stat, the membership and the memory of `group` and below.
group_usage read_usage(const std::string& group);

/// The `oom_kill` count of memory.events text: processes of the group and
/// below killed by an OOM killer (the counts are hierarchical).
int64_t oom_kills_of(std::string_view memory_events);

/// The count of `key` in a flat keyed file's text ("key value" lines, as
/// memory.events, pids.events and cpu.stat); 0 when the key is absent.
int64_t keyed_count(std::string_view text, std::string_view key);

/// oom_kills_of the group's memory.events; none without the memory
/// controller (or without the group).
std::optional<int64_t> oom_kills(const std::string& group);

} // namespace allox::os
