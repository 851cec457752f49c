// SPDX-License-Identifier: Apache-2.0
// The runs facet of the SESSION actor: runs, their queries, their workers and
// the session's execution settings (runs.cpp, run_queries.cpp, run_worker.cpp,
// configure.cpp). Internal to actors/session/.
#pragma once

#include "actors/session/facets.hpp"

namespace allox::session_facets {

// -- runs (runs.cpp) ----------------------------------------------------------

/// `unsupported`: the daemon runs without tracked execution.
caf::error no_execution();

// -- runs (runs.cpp, run_queries.cpp) -----------------------------------------

/// process.start: takes the lease, records the run and spawns its worker;
/// answers once the run has started (or failed to).
caf::result<run_row> handle(self_ptr self, const cmd::process_start& c);

/// process.get: a run's row, live or from the catalog.
caf::result<run_row> handle(self_ptr self, const cmd::process_get& c);

/// process.list: the session's runs from the catalog, all or a page.
caf::result<run_list> handle(self_ptr self, const cmd::process_list& c);

/// process.stop: kills one run; answers once it has ended.
caf::result<run_row> handle(self_ptr self, const cmd::process_stop& c);

/// process.wait: the run's row once it has ended, or at the timeout.
caf::result<run_row> handle(self_ptr self, const cmd::process_wait& c);

/// process.input: writes to a live run's stdin pipe or terminal.
caf::result<input_result> handle(self_ptr self, const cmd::process_input& c);

/// process.resize: a live terminal run's new size.
caf::result<resize_result> handle(self_ptr self, const cmd::process_resize& c);

/// A process.wait reached its timeout: answers it with the current row.
void on_wait_timeout(self_ptr self, const std::string& id, uint64_t waiter);

/// A live stream's subscription: registers its sink on an active run;
/// replies {row, dir}.
caf::result<run_subscription> handle(self_ptr self,
                                     const cmd::process_subscribe& c);

/// process.output: a range of a run's stdout or stderr log.
caf::result<output_slice> handle(self_ptr self, const cmd::process_output& c);

/// Kills the run's whole tree (cgroup.kill) with a stop reason, and calls
/// `then` once the run has ended.
void kill_run(self_ptr self, const std::string& id, const std::string& reason,
              std::function<void()> then);

/// Kills every live run with a stop reason, and calls `then` with their ids
/// once all of them have ended.
void kill_runs(self_ptr self, const std::string& reason,
               std::function<void(json::array)> then);

/// The run worker reported that the run's root process started.
void on_run_started(self_ptr self, const std::string& id, int64_t pid);

/// The run worker reported the end of the run (and whether its cgroup
/// emptied); a tracked run is drained at the TRACKER first.
void on_run_finished(self_ptr self, const run_finished& e);

/// The run's row is final: the lease goes (unless the run fences the
/// session); then (after_run) waiters are answered, the row is persisted.
void finish_run(self_ptr self, const std::string& id);

/// Answers a finished run's waiters (with `strict_failure` instead of the
/// row when a strict automatic checkpoint failed), persists its row and
/// runs its on_end continuations.
void answer_run(self_ptr self, const std::string& id,
                const caf::error& strict_failure);

/// At an orderly stop: kills the live runs and records them as stopped.
void shutdown_runs(self_ptr self);

/// At the daemon's orderly stop with --live-restore: whether this session
/// leaves its live runs running for the next daemon (adoption.cpp).
bool leaving_runs(self_ptr self);

/// Leaves the live runs running: their rows stay `running` in the catalog,
/// the threads waiting for them let go, and the next daemon adopts them.
void leave_runs(self_ptr self);

// -- runs that outlived the daemon (adoption.cpp) -----------------------------

/// Takes back the live runs start-up found (their rows, state `running`):
/// each holds a lease and is followed to its end by a detached thread.
void adopt_runs(self_ptr self, std::vector<run_row> rows);

/// The error of an adopted run's end: one that no stop explains and that
/// left no exit status had its init killed by someone else.
caf::optional<std::string> adopted_end_error(const run_state& run,
                                             const run_finished& e);

/// The row of a run this actor knows, or null (an earlier lifetime's).
const run_row* known_row(self_ptr self, const std::string& id);

/// Calls `next(row)` with a run's row: from memory, or from the catalog
/// (checked to belong to this session); errors go to `fail`.
void row_of(self_ptr self, const std::string& id,
            std::function<void(run_row)> next, fail_fn fail);

/// Like row_of, but `next` only looks at the row while it runs: a run in
/// memory is not copied (a tracked run's row holds its whole process map,
/// thousands of entries, and clients poll these queries).
void row_view_of(self_ptr self, const std::string& id,
                 std::function<void(const run_row&)> next, fail_fn fail);

// -- run worker and run rows (run_worker.cpp) ---------------------------------

/// The directory of a new run's logs, in its session's
/// (guest/store/run_output.hpp).
std::string run_dir(self_ptr self, const std::string& id);

/// The directory of a run's logs: the one its row names (runs from before
/// the per-session layout were directly in the audit root).
std::string logs_of(const exec_config& cfg, const run_row& row);

/// Writes a run row to the catalog (batched, not synced), with an audit
/// record in the same write when one is given (a run's end).
void persist_run(self_ptr self, const run_row& row,
                 caf::optional<audit_event> record = caf::none);

/// The row of a new run, in state `starting`.
run_row new_run_row(self_ptr self, const std::string& id,
                    const std::string& group);

/// What a run worker needs to prepare and start one run.
struct run_launch {
  std::string run_id;
  std::vector<std::string> argv;
  /// The run's cgroup: the session's, or its own below it (max_runs > 1).
  std::string group;
  /// Where the session's limits are written: the session's group.
  std::string limits_group;
  limit_list limits;
  /// The daemon's cgroup subtree (controllers are enabled from there).
  std::string tree_root;
  /// The run's log directory, in its session's (its parent).
  std::string dir;
  /// The session's logs are a subvolume limited to its share: when they
  /// are (nearly) full, the logs of its finished runs go, oldest first,
  /// until `output_room` bytes were freed, sparing the live runs
  /// `live_runs`. 0: no share, nothing to make room in.
  bool output_subvolume = false;
  int64_t output_room = 0;
  std::set<std::string> live_runs;
  /// Trees the run's user must own (current/, shared/), handed over
  /// before the spawn when their top is not its (guest/os/ownership.hpp).
  std::vector<std::string> owned_trees;
  uid_t uid = 0;
  gid_t gid = 0;
  /// The run's stdin (a pipe's read end or a terminal), if it has one.
  std::shared_ptr<os::unique_fd> stdin_fd;
  /// A terminal run: the master, whose output the worker copies to the
  /// stdout log.
  std::shared_ptr<os::unique_fd> terminal;
  /// A tracked run: the TRACKER must attribute the run's cgroup to
  /// `cookie` before the worker spawns.
  tracker_actor tracker;
  uint64_t cookie = 0;
  /// Proxy mode: the session's network namespace, joined before bwrap.
  std::shared_ptr<os::unique_fd> netns;
  /// The session's release signal: raised, the worker stops waiting and
  /// leaves the run to the next daemon.
  std::shared_ptr<os::release_signal> release;
};

/// The thread of one run: prepares its logs and cgroup, has a tracked
/// run's cgroup tracked by the TRACKER, waits to be told to start
/// (`atom::run`, once its row is durable) or not (`atom::retire`), starts
/// bwrap inside the cgroup once both happened, waits for the whole tree
/// and reports `started`/`finished`.
caf::behavior run_worker(caf::event_based_actor* self, session_actor session,
                         run_launch job);

// -- settings (configure.cpp) -------------------------------------------------

/// The session's execution settings over the daemon's defaults.
run_settings effective_settings(self_ptr self);

/// session.configure: network mode, egress policy, cgroup limits and
/// max_runs.
caf::result<settings_view> handle(self_ptr self,
                                  const cmd::session_configure& c);

/// network.configure: the network mode alone.
caf::result<network_status_view> handle(self_ptr self,
                                        const cmd::network_configure& c);

// -- disk share (disk_share.cpp) ----------------------------------------------

/// The bytes the session's workspace may reference (its disk.max over the
/// daemon's default, a percentage taken of the store); nullopt: no share,
/// or the store's quotas are off.
std::optional<uint64_t> disk_share(self_ptr self);

/// Makes the qgroup limit of current/ the session's share, on the lane,
/// then `done` (with an error if the ioctl failed). Nothing to do, and
/// `done` at once, when the store's quotas are off or the limit is right.
void enforce_disk_share(self_ptr self, fail_fn done);

} // namespace allox::session_facets
