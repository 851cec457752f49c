// SPDX-License-Identifier: Apache-2.0
// Gathering the actor tree's stats (system.dump, /metrics): each
// supervisor reports itself and asks every child for its own stats, with a
// timeout so one stuck child shows up as "unresponsive" instead of
// stalling the whole answer.
#pragma once

#include "messages/actors.hpp"
#include "messages/errors.hpp"
#include "messages/results/stats_json.hpp"
#include "messages/stats.hpp"

#include <chrono>
#include <memory>
#include <vector>

namespace allox {

inline constexpr std::chrono::seconds dump_timeout{5};

/// Milliseconds since `start`.
inline int64_t uptime_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// Delivers `base` as a supervisor's stats, its children `extra` (those
/// without an actor, reported by the supervisor) plus the stats of every
/// handle in `handles`, in the order they answer.
template <class Self, class Handle>
caf::result<actor_stats>
stats_with_children(Self* self, actor_stats base,
                    const std::vector<Handle>& handles,
                    std::vector<actor_stats> extra = {}) {
  auto rp = self->template make_response_promise<actor_stats>();
  struct gather {
    actor_stats base;
    size_t remaining;
  };
  base.supervises = true;
  base.children = std::move(extra);
  auto g = std::make_shared<gather>(gather{std::move(base), handles.size()});
  auto finish = [rp, g]() mutable {
    rp.deliver(std::move(g->base));
  };
  if (handles.empty()) {
    finish();
    return rp;
  }
  for (const auto& h : handles) {
    self->request(h, dump_timeout, atom::stats_v)
        .then(
            [g, finish](actor_stats& s) mutable {
              g->base.children.push_back(std::move(s));
              if (--g->remaining == 0)
                finish();
            },
            [g, finish](caf::error& err) mutable {
              g->base.children.push_back(unresponsive_stats(message_of(err)));
              if (--g->remaining == 0)
                finish();
            });
  }
  return rp;
}

} // namespace allox
