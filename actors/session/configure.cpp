// SPDX-License-Identifier: Apache-2.0
// The settings of a session's runs: session.configure and
// network.configure (network mode, proxy egress policy, cgroup limits,
// max_runs) over the daemon's defaults, persisted with the session row.
// Part of the runs facet; the network facet (network.cpp) applies a
// changed network mode or policy to the session's proxy namespace.
#include "actors/session/handlers.hpp"
#include "messages/results/settings_json.hpp"

namespace allox::session_facets {

namespace {

/// The settings the session chose itself, as the catalog keeps them.
own_settings own_settings_of(self_ptr self) {
  return parse_own_settings(self->state.init.row.exec_settings);
}

/// The session's own settings once `c` is applied, or why it is refused.
expected<own_settings> changed(self_ptr self, const cmd::session_configure& c) {
  auto& st = self->state;
  auto own = c.reset ? own_settings{} : own_settings_of(self);
  auto mode_before = effective_settings(self).network;
  if (!c.network.empty())
    own.network = c.network;
  if (c.has_egress) {
    if (c.egress_allow.empty() && c.egress_deny.empty())
      own.egress = caf::none;
    else
      own.egress = egress_lists{c.egress_allow, c.egress_deny};
  }
  if (own.egress)
    if (auto err = check_egress(*own.egress))
      return err;
  // Runs live in the namespace of their mode: switching under them would
  // leave them without the network they started with.
  auto mode_after =
      own.network ? *own.network : st.runs.config->default_network;
  if (mode_after != mode_before && !st.runs.active.empty())
    return conflict("the network mode cannot change while runs live: " +
                    st.key());
  for (const auto& change : c.limits) {
    if (change.clear) {
      clear_limit(own.limits, change.name);
      continue;
    }
    if (auto err = check_limit(*st.runs.config, change.name, change.value))
      return err;
    set_limit(own.limits, change.name, change.value);
  }
  if (c.max_runs) {
    // Runs live either in the session's group (one) or in groups of their
    // own below it (several): switching while one lives would mix both.
    if (!st.runs.active.empty())
      return conflict("max_runs cannot change while runs live: " + st.key());
    if (*c.max_runs == 1)
      own.max_runs = caf::none;
    else
      own.max_runs = *c.max_runs;
  }
  return own;
}

/// Applies `c`: one durable commit of the settings and their audit
/// record, then they are in force (a changed network applied to the
/// proxy namespace) and the caller gets `answer(self)`.
template <class T, class Answer>
caf::result<T> configure(self_ptr self, const cmd::session_configure& c,
                         Answer answer) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  if (auto err = require_alive(self))
    return err;
  auto own = changed(self, c);
  if (!own)
    return own.error();
  auto text = serialize_own_settings(*own);
  auto rp = self->make_response_promise<T>();
  metadata_write w;
  w.set_exec_settings.push_back({st.agent_id(), st.session_id(), text});
  w.audit.push_back(audit(self, "session.configure",
                          {{"origin", c.origin}, {"settings", to_json(*own)}}));
  commit(
      self, std::move(w),
      [self, rp, text, answer]() mutable {
        self->state.init.row.exec_settings = text;
        apply_network_settings(self);
        // A changed disk share is in force before the caller hears of it.
        enforce_disk_share(self, [self, rp, answer](caf::error err) mutable {
          if (err)
            rp.deliver(std::move(err));
          else
            rp.deliver(answer(self));
        });
      },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

} // namespace

run_settings effective_settings(self_ptr self) {
  const auto& cfg = *self->state.runs.config;
  return allox::effective_settings(own_settings_of(self), cfg.default_network,
                                   cfg.default_limits);
}

// Per-session execution settings: the network mode (inherit; isolated, a
// network namespace of each run with only loopback; proxy, the session's
// own namespace whose only way out is the egress broker), the egress
// policy of proxy mode (applied to new connections at once), and cgroup
// limits, which are refused as unsupported where the controller does not
// exist. They apply to the next run and persist with the session row.
caf::result<settings_view> handle(self_ptr self,
                                  const cmd::session_configure& c) {
  return configure<settings_view>(self, c, [](self_ptr s) {
    return settings_view{s->state.agent_id(), s->state.session_id(),
                         effective_settings(s)};
  });
}

// network.configure: the mode alone, answered as network.status.
caf::result<network_status_view> handle(self_ptr self,
                                        const cmd::network_configure& c) {
  return configure<network_status_view>(self, c.change, network_status_of);
}

} // namespace allox::session_facets
