// SPDX-License-Identifier: Apache-2.0
// The typed results of a tracked run's processes: the process map its row
// keeps, the page of its event log process.events answers and the tree
// process.tree answers. The native wire's JSON of these is written in one
// place, messages/results/processes_json.hpp.
#pragma once

#include "messages/events.hpp"
#include "messages/json.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace allox {

enum class run_phase : uint8_t; // messages/results/runs.hpp

/// One process of a tracked run, as its row's map keeps it. The members
/// are the wire's keys in the wire's order.
struct process_entry {
  /// "<boot id>:<start ns>:<pid>".
  std::string process_id;
  int64_t pid = 0;
  int64_t ppid = 0;
  /// The parent's process id, only when the parent is the run's.
  caf::optional<std::string> parent_process_id;
  std::string comm;
  /// Every program it exec'd, in order.
  std::vector<std::string> filenames;
  caf::optional<int64_t> exit_code;
  caf::optional<int64_t> signal;
  /// None once the daemon lost sight of it: a run alive when the daemon
  /// died (run_phase::interrupted).
  caf::optional<bool> alive = true;
  /// The run's root process.
  bool root = false;
  int64_t started_ns = 0;
  caf::optional<int64_t> exited_ns;
  /// Keys an older store's entry carries that this version does not know
  /// (a state.json row's event fields), kept and written after the others
  /// so that no import loses them.
  json::object extra;
};

/// A run's processes by process id, in the order they were first seen
/// (the order the wire and the catalog list them in).
class process_map {
public:
  /// The entry of `process_id`, or null.
  process_entry* find(const std::string& process_id);
  const process_entry* find(const std::string& process_id) const;

  /// Appends `e` (whose id is not in the map yet) and returns it.
  process_entry& add(process_entry e);

  /// Every process's `alive` becomes unknown (the daemon died while they
  /// may have lived on).
  void forget_liveness() {
    for (auto& e : entries_)
      e.alive = caf::none;
  }

  const std::vector<process_entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

private:
  std::vector<process_entry> entries_;
  /// Index into entries_ by process id: a run may see thousands of
  /// processes, each event looks its process up.
  std::unordered_map<std::string, size_t> index_;
};

/// One line of a run's event log (events.jsonl): the TRACKER's event with
/// the run's sequence number, the process's parent pid and the ids of the
/// run that logged it.
struct logged_event {
  uint64_t seq = 0;
  process_record event;
  /// The parent's pid: the fork's, else the process map's.
  int64_t ppid = 0;
  std::string run_id;
  std::string session_id;
  std::string agent_id;
};

/// process.events: a page of the run's event log after a sequence number.
struct event_page {
  std::string run_id;
  std::vector<logged_event> events;
  /// The last sequence number on the page (the request's `after` when
  /// the page is empty).
  int64_t next_after = 0;
  bool has_more = false;
  run_phase state{};
  bool trace_complete = false;
};

/// One process of process.tree, with the processes it started.
struct process_node {
  std::string process_id;
  int64_t pid = 0;
  int64_t ppid = 0;
  std::string comm;
  std::vector<std::string> filenames;
  caf::optional<int64_t> exit_code;
  caf::optional<int64_t> signal;
  /// As the map's entry has it.
  caf::optional<bool> alive = true;
  /// In the order they started.
  std::vector<process_node> children;
};

/// process.tree: the run's processes nested by parent.
struct process_tree_view {
  std::string run_id;
  run_phase state{};
  bool trace_complete = false;
  /// How many processes the map holds.
  uint64_t processes = 0;
  /// The top processes: those whose parent is not the run's.
  std::vector<process_node> tree;
};

/// process.status: the execution this daemon offers, answered by the RPC
/// actor from the daemon's settings.
struct execution_status {
  /// False on a daemon that runs no commands: nothing else is sent.
  bool execution_enabled = false;
  /// Runs are tracked by the eBPF TRACKER.
  bool tracked = false;
  std::string cgroup_root;
  std::string audit_root;
  /// Controllers that reach the sessions' cgroups.
  std::vector<std::string> cgroup_controllers;
  /// The store's block devices ("MAJ:MIN"), as io.max names them.
  std::vector<std::string> store_devices;
  /// The store's Btrfs quotas are on: disk.max is enforced.
  bool store_quotas = false;
  /// How they count: "simple" (a share holds what the session wrote and
  /// still pins, checkpoints included), "full" (what its workspace
  /// references) or "off".
  std::string store_quota_mode = "off";
};

} // namespace allox

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::event_page)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::process_tree_view)
