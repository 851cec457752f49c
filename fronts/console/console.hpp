// SPDX-License-Identifier: Apache-2.0
// The operator console's front: GET /ui (and /ui/) answers the page, which
// is code only. Every datum it shows comes through the native RPC under
// the daemon's token (docs/console.md), so the page itself is open.
#pragma once

#include "guest/http/server.hpp"

namespace allox::fronts {

/// Registers the console's routes on `srv` (before it listens).
void serve_console(http::server& srv);

} // namespace allox::fronts
