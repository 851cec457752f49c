// SPDX-License-Identifier: Apache-2.0
// Tracked execution for the SESSION actor: runs in Bubblewrap, in the
// session's cgroup v2 group, holding the session's execution lease.
// (Part of the session actor; split out to keep each file readable.)
#pragma once

#include <sys/types.h>

#include "guest/net/broker.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/release_signal.hpp"
#include "guest/os/unique_fd.hpp"
#include "guest/store/run_recovery.hpp"
#include "messages/actors.hpp"
#include "messages/results/settings.hpp"

#include <caf/typed_response_promise.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace allox {

/// Daemon-wide execution settings; absent when execution is disabled.
struct exec_config {
  std::string audit_root;
  /// Each session's run logs are a subvolume limited to its share: the
  /// audit root is on the store's filesystem and its quotas are on
  /// (guest/store/run_output.hpp).
  bool output_subvolumes = false;
  os::cgroup_tree cgroups;
  std::string init_path;
  /// The event endpoint's socket, bound into every run at
  /// /run/allox/events.sock, and its clients (empty: not installed).
  std::string events_socket;
  std::string turn_client;
  std::string share_client;
  /// allox-network, bound into proxy-mode runs (empty: not installed).
  std::string network_client;
  std::string bwrap_path = "/usr/bin/bwrap";
  bool kill_on_rollback = false;
  /// --live-restore: the daemon's orderly stop leaves live runs running
  /// for the next daemon to adopt, as a crash does.
  bool live_restore = false;
  /// Set by that stop (daemon/runtime.cpp) before the actors are told to
  /// end: sessions then leave their runs instead of stopping them.
  std::shared_ptr<std::atomic<bool>> leaving =
      std::make_shared<std::atomic<bool>>(false);
  std::string boot_id;
  /// Daemon-wide defaults of session.configure.
  std::string default_network = "inherit";
  /// Runs start under the seccomp filter (--syscall-filter).
  bool syscall_filter = true;
  /// The sandbox user runs execute as (--sandbox-user); 0:0 is root.
  uid_t sandbox_uid = 0;
  gid_t sandbox_gid = 0;
  limit_list default_limits;
  /// The store's block devices ("MAJ:MIN"), for callers writing io.max.
  std::vector<std::string> store_devices;
  /// Btrfs quota groups are on for the store (--store-quotas), so disk.max
  /// is enforced; the store's size, for shares given in percent.
  bool store_quotas = false;
  /// ... and count in simple mode: a share holds the session's checkpoints.
  bool store_simple_quotas = false;
  uint64_t store_bytes = 0;
  /// Process tracking: "disabled" or "ebpf".
  std::string tracking = "disabled";
  /// Size of the probe's ring buffer (--tracker-ring-bytes).
  uint32_t tracker_ring_bytes = 256 * 1024;
  /// Write provenance in the process probe (--write-provenance).
  bool write_provenance = true;
  /// The TRACKER while tracking is "ebpf" (set by the SUPERVISOR, which
  /// spawns it).
  tracker_actor tracker;
  /// The egress broker of proxy-mode sessions (guest/net/broker.hpp).
  std::shared_ptr<net::broker> broker;
};

/// A proxy-mode session's network namespace, served by the broker while
/// this lives (actors/session/network.cpp).
struct proxy_attachment {
  std::shared_ptr<net::broker> broker;
  std::string key;
  /// The namespace, joined by every run of the session.
  std::shared_ptr<os::unique_fd> ns;
  uint64_t inode = 0;
  std::shared_ptr<const net::egress_counters> counters;

  proxy_attachment() = default;
  proxy_attachment(const proxy_attachment&) = delete;
  proxy_attachment& operator=(const proxy_attachment&) = delete;
  ~proxy_attachment() {
    if (broker)
      broker->detach(key);
  }
};

/// Limits a session may set: cgroup control files, and disk.max, the
/// Btrfs quota of its workspace (guest/os/btrfs_quota.hpp).
inline const char* const limit_files[] = {
    "memory.max", "memory.high", "pids.max",  "cpu.max",
    "cpu.weight", "io.max",      "io.weight", "disk.max"};

/// The limit that is not a cgroup file: written to the workspace's qgroup
/// by the session (disk_share.cpp), never to a run's group.
inline constexpr std::string_view disk_limit = "disk.max";

/// Checks a limit name and value; unsupported when the controller it needs
/// is not available below the daemon's cgroup subtree (for disk.max: when
/// the store's quotas are off).
caf::error check_limit(const exec_config& cfg, const std::string& name,
                       const std::string& value);

/// The bytes the disk.max of `limits` stands for (a percentage taken of
/// the store); nullopt: none given, or the store's quotas are off.
std::optional<uint64_t> disk_share_of(const exec_config& cfg,
                                      const limit_list& limits);

/// A tracked run's events.jsonl, opened by its first append and kept open
/// until the run's trace is settled. Used only by jobs on the session's
/// read lane, which run one at a time.
struct event_log {
  std::string path;
  os::unique_fd fd;
};

/// One run as the session knows it.
struct run_state {
  /// The process.get result; persisted in the catalog's runs table on
  /// every change.
  run_row row;
  /// The run's worker, until it has been told to start (or not).
  caf::actor worker;
  std::vector<caf::typed_response_promise<run_row>> waiting_start;
  std::vector<caf::typed_response_promise<run_row>> waiting_end;
  /// process.wait callers by waiter id; answered at the end or when their
  /// timeout message comes.
  std::map<uint64_t, caf::typed_response_promise<run_row>> waiters;
  /// Live streams of the run, told of every state change until it ends.
  std::vector<std::shared_ptr<run_sink>> sinks;
  /// Continuations waiting for the run to end (rollback with kill).
  std::vector<std::function<void()>> on_end;
  /// The daemon's end of the run's stdin pipe or terminal, if any.
  std::shared_ptr<os::unique_fd> input;
  bool terminal = false;
  bool active = true;
  /// Started by an earlier daemon, which died; this one follows it
  /// (adoption.cpp). Its input went with the daemon that held it.
  bool adopted = false;

  // -- process tracking (tracking.cpp) --------------------------------------

  /// The run's cookie at the TRACKER; 0 when it is not tracked.
  uint64_t cookie = 0;
  /// Events received (the last `seq` handed out).
  uint64_t events = 0;
  /// Events the kernel (or the drain) lost.
  uint64_t events_lost = 0;
  /// The TRACKER lost events of the run or failed while it ran: the run
  /// fails and fences the session.
  bool trace_failed = false;
  /// Ended, waiting for the TRACKER's drain before its row is final.
  bool draining = false;
  /// Where its events go; null until the first batch and once settled.
  std::shared_ptr<event_log> events_file;
};

/// The session's runs: those alive and those finished since the actor
/// started (older ones are in the catalog).
struct session_runs {
  std::shared_ptr<const exec_config> config;
  std::map<std::string, run_state> runs;
  /// The runs alive now: at most max_runs (session.configure).
  std::set<std::string> active;
  /// Source of process.wait waiter ids.
  uint64_t next_waiter = 1;
  /// Runs interrupted by a daemon restart: they hold the session's lease
  /// until session.unfence.
  std::vector<std::string> interrupted;
  /// Tracked runs by cookie (tracking.cpp).
  std::map<uint64_t, std::string> by_cookie;
  /// Process events received for this session's runs, and lost.
  uint64_t events_received = 0;
  uint64_t events_lost = 0;
  /// Runs failed because their trace is incomplete.
  uint64_t trace_failures = 0;
  /// What the session's cgroup had counted when its last run ended and
  /// the group was removed (describe and /metrics add the live group's).
  os::group_counters retired_usage;
  /// The last reading of the live group and when it was taken (steady
  /// clock): describe and scrapes within a second share it, so neither
  /// pays six cgroupfs reads per call. Cleared when a group retires.
  std::optional<os::group_counters> usage_cache;
  /// The workspace's qgroup count, read with usage_cache (quotas on).
  std::optional<int64_t> disk_bytes_cache;
  std::chrono::steady_clock::time_point usage_cached_at;
  /// Raised when the session leaves its runs to the next daemon: the
  /// threads waiting for them let go (adoption.cpp).
  std::shared_ptr<os::release_signal> release =
      std::make_shared<os::release_signal>();
};

} // namespace allox
