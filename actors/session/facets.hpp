// SPDX-License-Identifier: Apache-2.0
// Internal header of the SESSION actor (actors/session/): what its facets
// share. Each facet file serves one group of actions (docs/architecture.md,
// "Session facets"); session.cpp dispatches to the handlers declared here.
// Not included outside actors/session/.
#pragma once

#include "actors/blocking.hpp"
#include "actors/session/session.hpp"
#include "messages/actors.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace allox::session_facets {

using self_ptr = session_actor::stateful_pointer<session_state>;
using promise = caf::typed_response_promise<json::value>;
using fail_fn = std::function<void(caf::error)>;

// -- shared helpers (session.cpp) ---------------------------------------------

/// A `conflict` error with `msg`.
caf::error conflict(std::string msg);

/// An audit record of `op` by this session, stamped now.
audit_event audit(self_ptr self, const std::string& op, json::object fields);

/// This session as a catalog key (journals).
session_ref ref(self_ptr self);

// -- guards (session.cpp) -----------------------------------------------------

/// `not_found` once the session is deleting or retired, `conflict` while it
/// is fenced.
caf::error require_alive(self_ptr self);

/// The prototype's "mutating": a mutation runs or a reset fences.
bool mutating(self_ptr self);

/// Guard of checkpoint.create/delete and session.rollback.
caf::error require_mutable(self_ptr self);

/// Guard of checkpoint.create/delete: require_mutable, but the session's
/// own live runs are allowed (live checkpoints).
caf::error require_checkpointable(self_ptr self);

/// Marks the session `mutating` with `what` (for the dump and conflicts).
void begin_mutation(self_ptr self, std::string what);

/// Ends the running mutation: back to `idle` unless the phase moved on.
void end_mutation(self_ptr self);

/// A mutation ended in `err`: counted, the session freed, the caller told.
void mutation_failed(self_ptr self, promise& rp, caf::error err);

/// A catalog write failed (or `what` else did): fences the session until
/// start-up recovery.
void fence(self_ptr self, const caf::error& err,
           std::string_view what = "metadata write failed");

// -- deferred work (checkpoints.cpp) ------------------------------------------

/// Notes a mutation and makes sure deferred work runs after it.
void arm_idle_work(self_ptr self);

/// Runs deferred work (retire the lane, sync checkpoint rows, purge
/// replaced trees) once the session has been idle for idle_delay.
void idle_work(self_ptr self);

// -- sequencing ---------------------------------------------------------------

/// Commits `w` durably, then runs `next`; a failed commit goes to `fail`.
template <class Next>
void commit(self_ptr self, metadata_write w, Next next, fail_fn fail) {
  self->request(self->state.init.metadata, caf::infinite, atom::write_v,
                std::move(w))
      .then([next](caf::ok_atom) mutable { next(); },
            [fail](caf::error& err) { fail(err); });
}

/// Runs a filesystem step on a worker thread, then `next(result)`.
template <class T = json::value, class Job, class Next>
void blocking(self_ptr self, Job job, Next next, fail_fn fail) {
  run_blocking<T>(self, std::move(job))
      .then([next](T& v) mutable { next(v); },
            [fail](caf::error& err) { fail(err); });
}

/// Runs a step of a mutation on the session's lane: mutations run one at a
/// time, and a burst of them does not start a thread per step.
/// The lane is retired once the session has been idle (idle_work). The
/// step's result is a T (a typed result of messages/results/, or JSON).
template <class T = json::value, class Job, class Next>
void mutation_step(self_ptr self, Job job, Next next, fail_fn fail) {
  // A fork's first step waits for its baseline and fences the session if
  // that failed; steps queued before the fence landed fail here instead.
  auto gated = [made = self->state.init.baseline_ready,
                job = std::move(job)]() mutable -> expected<T> {
    if (made.valid())
      if (auto err = made.get())
        return conflict("fork baseline not made: " + message_of(err));
    return job();
  };
  run_on_lane<T>(self, *self->state.lane, std::move(gated))
      .then(
          [self, next](T& v) mutable {
            arm_idle_work(self);
            next(v);
          },
          [self, fail](caf::error& err) {
            arm_idle_work(self);
            fail(err);
          });
}

/// Runs a read (a log slice) on the session's read lane, then
/// `next(result)`: no thread start per read, and reads never queue behind
/// a mutation's steps. Retired with the mutation lane (idle_work).
template <class T = json::value, class Job, class Next>
void read_step(self_ptr self, Job job, Next next, fail_fn fail) {
  run_on_lane<T>(self, *self->state.read_lane, std::move(job))
      .then(
          [self, next](T& v) mutable {
            arm_idle_work(self);
            next(v);
          },
          [self, fail](caf::error& err) {
            arm_idle_work(self);
            fail(err);
          });
}

/// Runs a read-only filesystem step on a worker thread and answers the
/// request with its result or error (long walks that must not hold up
/// the read lane).
template <class Job>
caf::result<json::value> answer_blocking(self_ptr self, Job job) {
  auto rp = self->make_response_promise<json::value>();
  blocking(
      self, std::move(job),
      [rp](json::value& v) mutable { rp.deliver(std::move(v)); },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

/// Asks METADATA about runs, then `next(page)`; errors go to `fail`.
template <class Next>
void query_runs(self_ptr self, run_query q, Next next, fail_fn fail) {
  self->request(self->state.init.metadata, caf::infinite, atom::runs_v,
                std::move(q))
      .then([next](run_page& page) mutable { next(page); },
            [fail](caf::error& err) { fail(err); });
}

// -- session.describe (session.cpp) -------------------------------------------

/// session.describe: the session's paths, checkpoint ids and head.
caf::result<json::value> handle_describe(self_ptr self,
                                         const cmd::session_describe& c);

// -- checkpoints (checkpoints.cpp) --------------------------------------------

/// checkpoint.list: every checkpoint's record, or a page of them.
caf::result<checkpoint_page>
handle_checkpoint_list(self_ptr self, const cmd::checkpoint_list& c);

/// checkpoint.describe: one checkpoint's record.
caf::result<checkpoint_view>
handle_checkpoint_describe(self_ptr self, const cmd::checkpoint_describe& c);

/// checkpoint.diff: paths changed between two checkpoints, or between a
/// checkpoint and current/, a page at a time.
caf::result<json::value> handle_checkpoint_diff(self_ptr self,
                                                const cmd::checkpoint_diff& c);

/// Creates a checkpoint (guards, intent record and snapshot on the lane,
/// then the catalog row after `answer`): checkpoint.create's path, also
/// taken by the automatic checkpoints (policy.cpp).
void create_checkpoint(self_ptr self, const params::checkpoint_create& req,
                       std::function<void(expected<json::value>)> answer);

/// Writes the row of a checkpoint whose snapshot (and intent record) is
/// durable, and the head with it when `as_head`; audited as
/// checkpoint.create.
void settle_checkpoint(self_ptr self, const checkpoint_row& row,
                       std::shared_ptr<fault_set> faults, bool as_head);

/// checkpoint.create: intent record and snapshot on the lane, the reply,
/// then the catalog row.
caf::result<json::value>
handle_checkpoint_create(self_ptr self, const cmd::checkpoint_create& c);

/// checkpoint.delete: journal, snapshot deleted on the lane, one commit.
caf::result<json::value>
handle_checkpoint_delete(self_ptr self, const cmd::checkpoint_delete& c);

/// session.fork, the source's part: a writable snapshot of a checkpoint
/// into the new session's current/, on this session's lane.
caf::result<json::value> handle_fork_into(self_ptr self,
                                          const cmd::session_fork_into& c);

// -- rollback (rollback.cpp) --------------------------------------------------

/// session.rollback, and session.rollback_after_runtime_reset when
/// `after_reset`; with kill_processes the active run is killed first.
caf::result<json::value> handle_rollback(self_ptr self,
                                         const cmd::session_rollback& c);

/// Deletes the trees replaced by rollbacks (deferred work).
void purge_discards(self_ptr self);

// -- runs (runs.cpp) ----------------------------------------------------------

/// `unsupported`: the daemon runs without tracked execution.
caf::error no_execution();

// -- settings (configure.cpp) -------------------------------------------------

/// The session's execution settings over the daemon's defaults:
/// {network, egress {allow, deny}, limits, max_runs}.
json::object effective_settings(self_ptr self);

/// session.configure (and network.configure): network mode, egress
/// policy, cgroup limits and max_runs.
caf::result<json::value> handle_configure(self_ptr self,
                                          const cmd::session_configure& c);

} // namespace allox::session_facets

#include "actors/session/facets_runs.hpp"

namespace allox::session_facets {

// -- files (files.cpp) --------------------------------------------------------

/// file.stat: one path's type, size, mode and mtime.
caf::result<file_entry> handle_file_stat(self_ptr self,
                                         const cmd::file_stat& c);

/// file.list: a directory's entries, a page at a time.
caf::result<dir_page> handle_file_list(self_ptr self, const cmd::file_list& c);

/// file.read: a range of a regular file.
caf::result<read_slice> handle_file_read(self_ptr self,
                                         const cmd::file_read& c);

/// file.write: replaces or appends to a regular file.
caf::result<write_result> handle_file_write(self_ptr self,
                                            const cmd::file_write& c);

/// file.mkdir: a directory (and its parents).
caf::result<mkdir_result> handle_file_mkdir(self_ptr self,
                                            const cmd::file_mkdir& c);

/// file.remove: a file, symlink or directory (tree).
caf::result<remove_result> handle_file_remove(self_ptr self,
                                              const cmd::file_remove& c);

/// file.move: a rename beneath one root, never over an existing path.
caf::result<move_result> handle_file_move(self_ptr self,
                                          const cmd::file_move& c);

/// Begins a bulk transfer (not while mutating, for uploads) or audits one.
caf::result<json::value> handle_file_transfer(self_ptr self,
                                              const cmd::file_transfer& c);

// -- process tracking (tracking.cpp) ------------------------------------------

/// Whether this session's runs are tracked (the daemon runs a TRACKER).
bool tracking_on(self_ptr self);

/// A new run cookie: non-zero, unique in the daemon.
uint64_t new_cookie();

/// A batch of process events of this session's runs: each run's process
/// map grows, the events are appended to its events.jsonl in one write.
void on_event_batch(self_ptr self, const process_event_batch& b);

/// The TRACKER cannot vouch for these runs' traces: live ones are killed
/// (stop reason provider_failure); each fails and fences the session.
void on_tracking_failure(self_ptr self, const tracking_failure& f);

/// Drains a tracked run at the TRACKER (its cgroup is empty), then sets
/// `events_lost` and `trace_complete` and calls `then`; an untracked run
/// goes straight to `then`.
void drain_run(self_ptr self, const std::string& id,
               std::function<void()> then);

/// process.events: a page of a run's events from its events.jsonl.
caf::result<json::value> handle_process_events(self_ptr self,
                                               const cmd::process_events& c);

/// process.tree: the run's process tree, nested from its root.
caf::result<json::value> handle_process_tree(self_ptr self,
                                             const cmd::process_tree& c);

// -- runtime: leases, background executions, reset (runtime.cpp) --------------

/// execution.acquire: the session's one execution lease.
caf::result<lease_granted> handle_acquire(self_ptr self,
                                          const cmd::execution_acquire& c);

/// execution.release: gives a lease back.
caf::result<json::value> handle_release(self_ptr self,
                                        const cmd::execution_release& c);

/// runtime.register_background: notes an outside launcher's execution.
caf::result<json::value>
handle_register_background(self_ptr self,
                           const cmd::runtime_register_background& c);

/// runtime.begin_reset: fences the session for a runtime reset (killing the
/// active run first with kill_processes).
caf::result<reset_begun> handle_begin_reset(self_ptr self,
                                            const cmd::runtime_begin_reset& c);

/// runtime.complete_reset: lifts the reset fence.
caf::result<json::value>
handle_complete_reset(self_ptr self, const cmd::runtime_complete_reset& c);

/// session.unfence: forgets the reset, leases, background registrations and
/// interrupted runs, with an audit record.
caf::result<json::value> handle_unfence(self_ptr self,
                                        const cmd::session_unfence& c);

// -- lifecycle (lifecycle.cpp) ------------------------------------------------

/// session.delete: row marked, directory moved to trash, row removed; the
/// actor quits.
caf::result<json::value> handle_delete(self_ptr self,
                                       const cmd::session_delete& c);

/// agent.delete's retirement (`retire` false: its undo); waits for the
/// baselines of forks into or out of this session.
caf::result<caf::ok_atom> handle_retire(self_ptr self, bool retire);

// -- turns (turns.cpp) --------------------------------------------------------

/// Restores the turn state and policies from the actor's init (its row).
void load_turns(self_ptr self);

/// turn.session_start: the baseline checkpoint (turn 0), once.
caf::result<json::value>
handle_turn_session_start(self_ptr self, const cmd::turn_session_start& c);

/// turn.message: captures the message of the next turn checkpoint.
caf::result<json::value> handle_turn_message(self_ptr self,
                                             const cmd::turn_message& c);

/// turn.end: a checkpoint per turn (not for duplicates, nor right after a
/// rollback).
caf::result<json::value> handle_turn_end(self_ptr self, const cmd::turn_end& c);

/// turn.status: the turn state and whether turns are enabled.
caf::result<json::value> handle_turn_status(self_ptr self,
                                            const cmd::turn_status& c);

/// A rollback is being committed: the next turn.end is skipped; the flag
/// is written in the rollback's own commit `w`.
void mark_rollback(self_ptr self, metadata_write& w);

// -- policy (policy.cpp) ------------------------------------------------------

/// The session's policy in force.
effective_policy policy_of(self_ptr self);

/// What an automatic checkpoint is taken for.
struct auto_request {
  /// The metadata's `event` and the result's.
  std::string event;
  std::string origin;
  std::string message;
  /// Added to {auto, event, timestamp}.
  json::object metadata;
};

/// Deletes the oldest automatic checkpoints beyond keep_auto (through
/// checkpoint.delete) and calls `done` with the ids deleted.
void prune(self_ptr self, std::function<void(json::array)> done);

/// Now as ISO-8601 UTC with microseconds (the metadata's timestamp).
std::string iso_now();

/// Takes an automatic checkpoint through checkpoint.create, prunes to
/// keep_auto, and calls `done` with the reference adapter's result; a
/// failure is non-blocking ({created: false, error, non_blocking}) unless
/// the policy is strict, then `done` gets the error.
void auto_checkpoint(self_ptr self, auto_request req,
                     std::function<void(expected<json::object>)> done);

/// policy.get: the effective policy, where each field comes from.
caf::result<json::value> handle_policy_get(self_ptr self,
                                           const cmd::policy_get& c);

/// policy.set: changes the session's level; audited.
caf::result<json::value> handle_policy_set(self_ptr self,
                                           const cmd::policy_set& c);

/// The agent's level changed.
void on_agent_policy(self_ptr self, const cmd::agent_policy_changed& c);

/// (Re-)arms the interval timer for the policy in force.
void arm_interval(self_ptr self);

/// An interval tick: a checkpoint if current/ changed since the head.
void on_interval_tick(self_ptr self, const cmd::interval_tick& t);

/// A run's row is final: with auto_checkpoint_runs and exit code 0, a
/// checkpoint first (its result in the row's auto_checkpoint); then
/// `answer` (with the error of a strict failure).
void after_run(self_ptr self, const std::string& id,
               std::function<void(caf::error)> answer);

// -- sharing (share.cpp) ------------------------------------------------------

/// Restores the share policy from the actor's init (its row).
void load_share(self_ptr self);

/// share.status: the session's share policy.
caf::result<json::value> handle_share_status(self_ptr self,
                                             const cmd::share_status& c);

/// share.enable: the scope checked on the lane, then the policy committed
/// (durable) and audited.
caf::result<json::value> handle_share_enable(self_ptr self,
                                             const cmd::share_enable& c);

/// share.disable: the policy committed (durable) with enabled false, scope
/// and permission kept; audited.
caf::result<json::value> handle_share_disable(self_ptr self,
                                              const cmd::share_disable& c);

/// share.list as the caller: own policy, then the target's SESSION.
caf::result<json::value> handle_share_list(self_ptr self,
                                           const cmd::share_list& c);

/// share.read as the caller: own policy, then the target's SESSION.
caf::result<json::value> handle_share_read(self_ptr self,
                                           const cmd::share_read& c);

/// share.write as the caller: own policy, then the target's SESSION.
caf::result<json::value> handle_share_write(self_ptr self,
                                            const cmd::share_write& c);

/// A list/read/write of another session on this one's files: policy,
/// permission and path checked, served on the lane, audited here.
caf::result<json::value> handle_share_access(self_ptr self,
                                             const cmd::share_access& c);

// -- network (network.cpp) ----------------------------------------------------

/// Refuses an egress object {allow, deny} whose rules do not parse
/// (invalid_argument).
caf::error check_egress(const json::object& egress);

/// Proxy mode: makes the session's namespace and attaches it to the
/// broker, unless it has one; the namespace runs join.
expected<std::shared_ptr<os::unique_fd>> ensure_proxy(self_ptr self);

/// After session.configure: a proxy namespace follows the new policy, or
/// is dropped (closing its connections) when the mode is no longer proxy.
void apply_network_settings(self_ptr self);

/// network.status: mode, namespace, policy and live connection counts.
json::object network_status_of(self_ptr self);
caf::result<json::value> handle_network_status(self_ptr self,
                                               const cmd::network_status& c);

/// A connection attempt of the session's proxy: audited, in batches.
void on_egress_attempt(self_ptr self, const cmd::egress_attempt& e);

} // namespace allox::session_facets
