// SPDX-License-Identifier: Apache-2.0
// Internal header of the SESSION actor (actors/session/): what every facet
// shares (helpers, guards, the ways a step runs). Each facet declares its
// handlers in a header of its own (checkpoints.hpp, runs.hpp, ...), all
// gathered by handlers.hpp (docs/architecture.md, "Session facets").
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
template <class T>
void mutation_failed(self_ptr self, caf::typed_response_promise<T>& rp,
                     caf::error err) {
  ++self->state.failures;
  end_mutation(self);
  rp.deliver(std::move(err));
}

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
template <class T, class Job, class Next>
void blocking(self_ptr self, Job job, Next next, fail_fn fail) {
  run_blocking<T>(self, std::move(job))
      .then([next](T& v) mutable { next(v); },
            [fail](caf::error& err) { fail(err); });
}

/// Runs a step of a mutation on the session's lane: mutations run one at a
/// time, and a burst of them does not start a thread per step.
/// The lane is retired once the session has been idle (idle_work). The
/// step's result is a T (a typed result of messages/results/, a value, or
/// step_done).
template <class T, class Job, class Next>
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
template <class T, class Job, class Next>
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
template <class T, class Job>
caf::result<T> answer_blocking(self_ptr self, Job job) {
  auto rp = self->make_response_promise<T>();
  blocking<T>(
      self, std::move(job), [rp](T& v) mutable { rp.deliver(std::move(v)); },
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

} // namespace allox::session_facets
