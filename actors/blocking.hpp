// Runs blocking work (Btrfs ioctls, renames, fsync, recursive deletes) on a
// short-lived detached worker with its own thread, so the calling actor and
// every other actor on the scheduler stay responsive. The caller attaches
// .then(on_result, on_error) to the returned response handle.
#pragma once

#include "messages/atoms.hpp"
#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/spawn_options.hpp>

#include <exception>
#include <utility>

namespace allox {

/// `job` returns expected<json::value>; exceptions become `internal` errors.
template <class Self, class Job>
auto run_blocking(Self* self, Job job) {
  auto worker = self->template spawn<caf::detached>(
      [job =
           std::move(job)](caf::event_based_actor* w) mutable -> caf::behavior {
        return {
            [w, job = std::move(job)](
                atom::run) mutable -> caf::result<json::value> {
              w->quit();
              try {
                expected<json::value> r = job();
                if (!r)
                  return std::move(r.error());
                return json_reply(std::move(*r));
              } catch (const std::exception& e) {
                return make_error(errc::internal, e.what());
              }
            },
        };
      });
  return self->request(worker, caf::infinite, atom::run_v);
}

} // namespace allox
