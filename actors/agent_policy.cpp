// SPDX-License-Identifier: Apache-2.0
// The AGENT's level of the checkpoint policy: policy.get and policy.set
// without a session_id. A change is committed, then told to every session
// actor of the agent, which resolves its effective policy from it.
#include "actors/agent_detail.hpp"

#include "messages/policy.hpp"

#include <caf/typed_response_promise.hpp>

namespace allox::agent_detail {

namespace {

/// The agent's level as policy.get answers it.
policy_view view(self_ptr self) {
  const auto& row = self->state.init.row;
  return {row.agent_id, "", parse_policy(row.policy), caf::none};
}

} // namespace

caf::result<policy_view> handle(self_ptr self, const cmd::policy_get&) {
  return view(self);
}

// Applied in memory at once, so a second policy.set that arrives before the
// commit builds on this one; the sessions hear of it once it is committed.
caf::result<policy_view> handle(self_ptr self, const cmd::policy_set& c) {
  auto& row = self->state.init.row;
  auto before = row.policy;
  auto next = apply(parse_policy(row.policy), c.change);
  row.policy = serialize_policy(next);
  metadata_write w;
  w.set_policies.push_back({row.agent_id, "", row.policy});
  w.audit.push_back(audit("policy.set", row.agent_id, "",
                          json::object{{"level", "agent"},
                                       {"policy", to_json(next)},
                                       {"origin", c.origin}}));
  auto rp = self->make_response_promise<policy_view>();
  self->request(self->state.init.metadata, caf::infinite, atom::write_v,
                std::move(w))
      .then(
          [self, rp](caf::ok_atom) mutable {
            const auto& r = self->state.init.row;
            for (auto& [sid, e] : self->state.sessions)
              if (e.handle)
                self->send(e.handle, cmd::agent_policy_changed{r.policy});
            rp.deliver(view(self));
          },
          [self, rp, before](caf::error& err) mutable {
            self->state.init.row.policy = before;
            rp.deliver(std::move(err));
          });
  return rp;
}

} // namespace allox::agent_detail
