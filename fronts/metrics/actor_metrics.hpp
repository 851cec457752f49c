// SPDX-License-Identifier: Apache-2.0
// The metrics front: the actor tree's part of GET /metrics, rendered from
// its typed stats (messages/stats.hpp). An entry's kind says whether it is
// a counter or a gauge, so no key of system.dump's JSON is read here, and
// renaming a dump field renames no metric. The HTTP transport renders its
// own request counts and latencies and appends this part (the daemon wires
// it: guest/http never knows the actors' metric names).
#pragma once

#include "messages/stats.hpp"

#include <string>

namespace allox::fronts {

/// Appends the metrics of the actor tree's stats to `out`; with no tree
/// (the actors did not answer the scrape), only `allox_up 0`.
void render_actor_metrics(std::string& out, const actor_stats* tree);

} // namespace allox::fronts
