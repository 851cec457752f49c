// SPDX-License-Identifier: Apache-2.0
// How a front calls a session: its actor looked up once through AGENTS and
// kept, and a command bounced by a session actor that ended meanwhile (a
// restart by its agent) sent once more to the successor. Shared by the
// fronts that address sessions by name (E2B, MCP).
#pragma once

#include "messages/actors.hpp"
#include "messages/commands/command.hpp"
#include "messages/errors.hpp"
#include "messages/ids.hpp"

#include <caf/event_based_actor.hpp>

#include <string>
#include <unordered_map>
#include <utility>

namespace allox::fronts {

/// Session actors by "agent/session", as a front's state keeps them.
struct session_cache {
  agents_actor agents;
  std::unordered_map<std::string, session_actor> actors;

  /// Forgets every entry of the actor that went down (a down handler's
  /// work; the front monitors each actor it keeps).
  void forget(const caf::actor_addr& gone) {
    for (auto it = actors.begin(); it != actors.end();)
      it = it->second.address() == gone ? actors.erase(it) : std::next(it);
  }
};

/// Sends `cmd` to session `ref`, through `cache` (a member of `self`'s
/// state, so it outlives every callback); `ok` gets the typed reply,
/// `fail` the error.
template <class Self, class Command, class OnOk, class OnErr>
void call_session(Self self, session_cache& cache, const session_ref& ref,
                  Command cmd, OnOk ok, OnErr fail, bool retry = true) {
  cmd.session = ref;
  auto key = session_key(ref.agent_id, ref.session_id);
  auto go = [self, &cache, ref, key, cmd, ok, fail,
             retry](const session_actor& target) mutable {
    self->request(target, caf::infinite, cmd)
        .then([ok](cmd::reply_t<Command>& r) mutable { ok(r); },
              [self, &cache, ref, key, cmd, ok, fail, retry,
               addr = target.address()](caf::error& err) mutable {
                if (!retry || !receiver_down(err))
                  return fail(err);
                if (auto it = cache.actors.find(key);
                    it != cache.actors.end() && it->second.address() == addr)
                  cache.actors.erase(it);
                call_session(self, cache, ref, std::move(cmd), std::move(ok),
                             std::move(fail), false);
              });
  };
  if (auto it = cache.actors.find(key); it != cache.actors.end())
    return go(it->second);
  self->request(cache.agents, caf::infinite, atom::session_v, ref.agent_id,
                ref.session_id)
      .then(
          [self, &cache, key, go](session_actor& target) mutable {
            if (cache.actors.emplace(key, target).second)
              self->monitor(target);
            go(target);
          },
          [fail](caf::error& err) mutable { fail(err); });
}

} // namespace allox::fronts
