// SPDX-License-Identifier: Apache-2.0
// Runs blocking work (Btrfs ioctls, renames, fsync, recursive deletes, file
// reads) off the actor scheduler, so the calling actor and every other
// actor stay responsive. A job returns expected<T>; the caller gets a T or
// the error. Two ways:
//
// - run_blocking<T>: a short-lived detached worker with its own thread, one
//   per job; jobs run in parallel. For rare, long jobs.
// - run_on_lane<T>: a long-lived detached worker (a "lane") that the caller
//   keeps for a burst of steps, one job at a time, so that no step pays for
//   starting a thread. The caller retires the lane when it goes idle
//   (retire_lane).
//
// The caller attaches .then([](T&) {...}, [](caf::error&) {...}) to the
// returned handle. T is named at every call and must be a message type
// (an inspect() or CAF_ALLOW_UNSAFE_MESSAGE_TYPE): a typed result of
// messages/results/, a value, or step_done for a step that only succeeds
// or fails.
#pragma once

#include "messages/atoms.hpp"
#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/make_message.hpp>
#include <caf/send.hpp>
#include <caf/spawn_options.hpp>

#include <exception>
#include <functional>
#include <type_traits>
#include <utility>

namespace allox {

/// The result of a step that only succeeds or fails.
struct step_done {};

/// One job for a lane, its result already a message (a T or an error).
/// Local only: never serialized.
struct lane_job {
  std::function<caf::message()> run;
};

/// Runs `job` (returning expected<T>), turning its value or error into the
/// reply, and exceptions into `internal` errors.
template <class T, class Job>
caf::message run_job(Job& job) {
  try {
    expected<T> r = job();
    if (!r)
      return caf::make_message(std::move(r.error()));
    return caf::make_message(std::move(*r));
  } catch (const std::exception& e) {
    return caf::make_message(make_error(errc::internal, e.what()));
  }
}

/// Runs `job` on a thread of its own; the reply is a T or an error.
template <class T, class Self, class Job>
auto run_blocking(Self* self, Job job) {
  auto worker = self->template spawn<caf::detached>(
      [job =
           std::move(job)](caf::event_based_actor* w) mutable -> caf::behavior {
        return {
            [w, job = std::move(job)](atom::run) mutable -> caf::message {
              w->quit();
              return run_job<T>(job);
            },
        };
      });
  return self->request(worker, caf::infinite, atom::run_v);
}

/// The behavior of a lane: runs jobs in arrival order until retired.
inline caf::behavior blocking_lane(caf::event_based_actor* self) {
  return {
      [](atom::run, lane_job& job) -> caf::message { return job.run(); },
      [self](atom::retire) { self->quit(); },
  };
}

/// Runs `job` on `lane`, starting the lane if there is none; the reply is
/// a T or an error. `job` must be copyable.
template <class T, class Self, class Job>
auto run_on_lane(Self* self, caf::actor& lane, Job job) {
  if (!lane)
    lane = self->template spawn<caf::detached>(blocking_lane);
  return self->request(lane, caf::infinite, atom::run_v,
                       lane_job{[job = std::move(job)]() mutable {
                         return run_job<T>(job);
                       }});
}

/// Lets a lane finish its queued jobs and end its thread.
inline void retire_lane(caf::actor& lane) {
  if (!lane)
    return;
  caf::anon_send(lane, atom::retire_v);
  lane = nullptr;
}

} // namespace allox

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::lane_job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::step_done)
