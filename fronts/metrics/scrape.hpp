// SPDX-License-Identifier: Apache-2.0
// GET /metrics (Prometheus text exposition 0.0.4), the metrics front's
// route: the transport's request counts and gauges as the loop thread sees
// them when the scrape arrives, then the actor tree's typed stats
// (system.dump through the RPC actor), rendered by render_actor_metrics.
// Behind the daemon's token on its listener; open on the metrics address
// (--metrics-listen), which serves nothing else but /health.
#pragma once

#include "messages/actors.hpp"

#include <functional>

namespace allox::http {
class server;
}

namespace allox::fronts {

/// Registers GET /metrics on `srv` (before it listens); `rpc` gives the
/// RPC actor once the actor tree is up (null before and after).
void serve_metrics(http::server& srv, std::function<rpc_actor()> rpc);

} // namespace allox::fronts
