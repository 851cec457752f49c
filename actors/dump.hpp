// SPDX-License-Identifier: Apache-2.0
// system.dump support: each supervisor describes itself and asks every
// child for its own description, with a timeout so one stuck child shows up
// as "unresponsive" instead of stalling the dump.
#pragma once

#include "messages/actors.hpp"
#include "messages/errors.hpp"

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

/// Delivers `self` as `base` with `children` = `extra` plus the dump of
/// every handle in `handles`.
template <class Self, class Handle>
caf::result<json::value> dump_with_children(Self* self, json::object base,
                                            const std::vector<Handle>& handles,
                                            json::array extra = {}) {
  auto rp = self->template make_response_promise<json::value>();
  struct gather {
    json::object base;
    json::array children;
    size_t remaining;
  };
  auto g = std::make_shared<gather>(
      gather{std::move(base), std::move(extra), handles.size()});
  auto finish = [rp, g]() mutable {
    g->base["children"] = std::move(g->children);
    rp.deliver(json::value(std::move(g->base)));
  };
  if (handles.empty()) {
    finish();
    return rp;
  }
  for (const auto& h : handles) {
    self->request(h, dump_timeout, atom::dump_v)
        .then(
            [g, finish](json::value& v) mutable {
              g->children.push_back(std::move(v));
              if (--g->remaining == 0)
                finish();
            },
            [g, finish](caf::error& err) mutable {
              g->children.push_back(json::object{{"state", "unresponsive"},
                                                 {"error", message_of(err)}});
              if (--g->remaining == 0)
                finish();
            });
  }
  return rp;
}

} // namespace allox
