// SPDX-License-Identifier: Apache-2.0
// An actor's behaviour derived from its command list
// (messages/commands/lists.hpp): one handler per command type, found by
// overload resolution, so a command in the list without a handler does not
// compile, and a list that drifts from the typed interface does not either.
#pragma once

#include <caf/detail/type_list.hpp>

#include <utility>

namespace allox {

/// `Behavior` with one entry per command of the list, each `serve(c)`, and
/// then `others` (events and replies that are not commands).
template <class Behavior, class... Commands, class Serve, class... Others>
Behavior behavior_of(caf::detail::type_list<Commands...>, Serve serve,
                     Others... others) {
  return {[serve](const Commands& c) {
            return serve(c);
          }...,
          std::move(others)...};
}

} // namespace allox
