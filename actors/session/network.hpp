// SPDX-License-Identifier: Apache-2.0
// The network facet of the SESSION actor: the proxy namespace and the egress
// broker's records (network.cpp). Internal to actors/session/.
#pragma once

#include "actors/session/facets.hpp"

namespace allox::session_facets {

// -- network (network.cpp) ----------------------------------------------------

/// Refuses egress lists whose rules do not parse (invalid_argument).
caf::error check_egress(const egress_lists& egress);

/// Proxy mode: makes the session's namespace and attaches it to the
/// broker, unless it has one; the namespace runs join.
expected<std::shared_ptr<os::unique_fd>> ensure_proxy(self_ptr self);

/// After session.configure: a proxy namespace follows the new policy, or
/// is dropped (closing its connections) when the mode is no longer proxy.
void apply_network_settings(self_ptr self);

/// network.status: mode, namespace, policy and live connection counts.
network_status_view network_status_of(self_ptr self);
caf::result<network_status_view> handle(self_ptr self,
                                        const cmd::network_status& c);

/// port.connect: a socket to a port the session's processes listen on.
caf::result<socket_handle> handle(self_ptr self, const cmd::port_connect& c);

/// A connection attempt of the session's proxy: audited, in batches.
void on_egress_attempt(self_ptr self, const cmd::egress_attempt& e);

} // namespace allox::session_facets
