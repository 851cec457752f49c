// SPDX-License-Identifier: Apache-2.0
// The watches facet of the SESSION actor: directory watches fronts read
// to stream changes (watches.cpp). Internal to actors/session/.
#pragma once

#include "actors/session/facets.hpp"

namespace allox::session_facets {

// -- watches (watches.cpp) ----------------------------------------------------

/// file.watch: opens a watch on a directory (on the read lane).
caf::result<watch_opened> handle(self_ptr self, const cmd::file_watch& c);

/// file.watch_events: the changes since the last read, at once.
caf::result<watch_changes> handle(self_ptr self,
                                  const cmd::file_watch_events& c);

/// file.unwatch: ends a watch with its last changes.
caf::result<watch_changes> handle(self_ptr self, const cmd::file_unwatch& c);

} // namespace allox::session_facets
