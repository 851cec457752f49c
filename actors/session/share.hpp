// SPDX-License-Identifier: Apache-2.0
// The share facet of the SESSION actor: the share policy and cross-session file
// access (share.cpp). Internal to actors/session/.
#pragma once

#include "actors/session/facets.hpp"

namespace allox::session_facets {

// -- sharing (share.cpp) ------------------------------------------------------

/// Restores the share policy from the actor's init (its row).
void load_share(self_ptr self);

/// share.status: the session's share policy.
caf::result<share_view> handle(self_ptr self, const cmd::share_status& c);

/// share.enable: the scope checked on the lane, then the policy committed
/// (durable) and audited.
caf::result<share_view> handle(self_ptr self, const cmd::share_enable& c);

/// share.disable: the policy committed (durable) with enabled false, scope
/// and permission kept; audited.
caf::result<share_view> handle(self_ptr self, const cmd::share_disable& c);

/// share.list as the caller: own policy, then the target's SESSION.
caf::result<share_listing> handle(self_ptr self, const cmd::share_list& c);

/// share.read as the caller: own policy, then the target's SESSION.
caf::result<share_content> handle(self_ptr self, const cmd::share_read& c);

/// share.write as the caller: own policy, then the target's SESSION.
caf::result<share_written> handle(self_ptr self, const cmd::share_write& c);

/// A list/read/write of another session on this one's files: policy,
/// permission and path checked, served on the lane, audited here.
caf::result<share_answer> handle(self_ptr self, const cmd::share_access& c);

} // namespace allox::session_facets
