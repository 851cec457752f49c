// Runs blocking work (Btrfs ioctls, renames, fsync, recursive deletes) off
// the actor scheduler, so the calling actor and every other actor stay
// responsive. Two ways, both answering with expected<json::value>:
//
// - run_blocking: a short-lived detached worker with its own thread, one
//   per job; jobs run in parallel.
// - run_on_lane: a long-lived detached worker (a "lane") that the caller
//   keeps for a burst of latency-critical steps, one job at a time, so
//   that no step pays for starting a thread. The caller retires the lane
//   when it goes idle (retire_lane).
//
// The caller attaches .then(on_result, on_error) to the returned handle.
#pragma once

#include "messages/atoms.hpp"
#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/spawn_options.hpp>

#include <exception>
#include <functional>
#include <utility>

namespace allox {

/// One job for a lane. Local only: never serialized.
struct lane_job {
  std::function<expected<json::value>()> run;
};

/// Runs `job`, turning exceptions into `internal` errors.
template <class Job>
caf::result<json::value> run_job(Job& job) {
  try {
    expected<json::value> r = job();
    if (!r)
      return std::move(r.error());
    return json_reply(std::move(*r));
  } catch (const std::exception& e) {
    return make_error(errc::internal, e.what());
  }
}

/// `job` returns expected<json::value>.
template <class Self, class Job>
auto run_blocking(Self* self, Job job) {
  auto worker = self->template spawn<caf::detached>(
      [job =
           std::move(job)](caf::event_based_actor* w) mutable -> caf::behavior {
        return {
            [w, job = std::move(job)](
                atom::run) mutable -> caf::result<json::value> {
              w->quit();
              return run_job(job);
            },
        };
      });
  return self->request(worker, caf::infinite, atom::run_v);
}

/// The behavior of a lane: runs jobs in arrival order until retired.
inline caf::behavior blocking_lane(caf::event_based_actor* self) {
  return {
      [](atom::run, lane_job& job) -> caf::result<json::value> {
        return run_job(job.run);
      },
      [self](atom::retire) { self->quit(); },
  };
}

/// Runs `job` on `lane`, starting the lane if there is none. `job` must be
/// copyable.
template <class Self, class Job>
auto run_on_lane(Self* self, caf::actor& lane, Job job) {
  if (!lane)
    lane = self->template spawn<caf::detached>(blocking_lane);
  return self->request(lane, caf::infinite, atom::run_v,
                       lane_job{std::move(job)});
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
