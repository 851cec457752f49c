// SPDX-License-Identifier: Apache-2.0
// The settings of a session's runs: session.configure and
// network.configure (network mode, proxy egress policy, cgroup limits,
// max_runs) over the daemon's defaults, persisted with the session row.
// Part of the runs facet; the network facet (network.cpp) applies a
// changed network mode or policy to the session's proxy namespace.
#include "actors/session/handlers.hpp"
#include "messages/results/network_json.hpp"

namespace allox::session_facets {

/// The session's own settings as stored (an empty object for none).
static json::object stored_settings(self_ptr self) {
  const auto& text = self->state.init.row.exec_settings;
  if (!text)
    return {};
  boost::system::error_code ec;
  auto v = json::parse(*text, ec);
  return !ec && v.is_object() ? v.as_object() : json::object{};
}

json::object effective_settings(self_ptr self) {
  const auto& cfg = *self->state.runs.config;
  json::object limits;
  for (const auto& [k, v] : cfg.default_limits)
    limits[k] = v;
  std::string network = cfg.default_network;
  json::object egress{{"allow", json::array{}}, {"deny", json::array{}}};
  int64_t max_runs = 1;
  auto own = stored_settings(self);
  if (auto* n = own.if_contains("network"); n && n->is_string())
    network = std::string{n->get_string()};
  if (auto* e = own.if_contains("egress"); e && e->is_object())
    for (const auto& kv : e->as_object())
      egress[kv.key()] = kv.value();
  if (auto* l = own.if_contains("limits"); l && l->is_object())
    for (const auto& kv : l->as_object())
      limits[kv.key()] = kv.value();
  if (auto* m = own.if_contains("max_runs"); m && m->is_int64())
    max_runs = m->as_int64();
  return json::object{{"network", network},
                      {"egress", std::move(egress)},
                      {"limits", std::move(limits)},
                      {"max_runs", max_runs}};
}

// Per-session execution settings: the network mode (inherit; isolated, a
// network namespace of each run with only loopback; proxy, the session's
// own namespace whose only way out is the egress broker), the egress
// policy of proxy mode (applied to new connections at once), and cgroup
// limits, which are refused as unsupported where the controller does not
// exist. They apply to the next run and persist with the session row.
caf::result<json::value> handle(self_ptr self,
                                const cmd::session_configure& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  if (auto err = require_alive(self))
    return err;
  auto settings = stored_settings(self);
  if (c.reset)
    settings = {};
  auto mode_before = effective_settings(self).at("network");
  if (!c.network.empty())
    settings["network"] = c.network;
  if (c.has_egress) {
    if (c.egress_allow.empty() && c.egress_deny.empty()) {
      settings.erase("egress");
    } else {
      json::array allow(c.egress_allow.begin(), c.egress_allow.end());
      json::array deny(c.egress_deny.begin(), c.egress_deny.end());
      settings["egress"] =
          json::object{{"allow", std::move(allow)}, {"deny", std::move(deny)}};
    }
  }
  if (auto* e = settings.if_contains("egress"); e && e->is_object())
    if (auto err = check_egress(e->as_object()))
      return err;
  // Runs live in the namespace of their mode: switching under them would
  // leave them without the network they started with.
  auto mode_after = settings.contains("network")
                        ? settings.at("network")
                        : json::value(st.runs.config->default_network);
  if (mode_after != mode_before && !st.runs.active.empty())
    return conflict("the network mode cannot change while runs live: " +
                    st.key());
  if (c.has_limits) {
    json::object limits;
    if (auto* old = settings.if_contains("limits"); old && old->is_object())
      limits = old->as_object();
    for (const auto& change : c.limits) {
      if (change.clear) {
        limits.erase(change.name);
        continue;
      }
      if (auto err = check_limit(*st.runs.config, change.name, change.value))
        return err;
      limits[change.name] = change.value;
    }
    settings["limits"] = std::move(limits);
  }
  if (c.max_runs) {
    // Runs live either in the session's group (one) or in groups of their
    // own below it (several): switching while one lives would mix both.
    if (!st.runs.active.empty())
      return conflict("max_runs cannot change while runs live: " + st.key());
    if (*c.max_runs == 1)
      settings.erase("max_runs");
    else
      settings["max_runs"] = *c.max_runs;
  }
  caf::optional<std::string> text;
  if (!settings.empty())
    text = json::serialize(settings);
  auto rp = self->make_response_promise<json::value>();
  metadata_write w;
  w.set_exec_settings.push_back({st.agent_id(), st.session_id(), text});
  w.audit.push_back(audit(self, "session.configure",
                          {{"origin", c.origin}, {"settings", settings}}));
  commit(
      self, std::move(w),
      [self, rp, text, status_reply = c.status_reply]() mutable {
        self->state.init.row.exec_settings = text;
        apply_network_settings(self);
        if (status_reply) {
          rp.deliver(json::value(to_json(network_status_of(self))));
          return;
        }
        auto r = effective_settings(self);
        r["agent_id"] = self->state.agent_id();
        r["session_id"] = self->state.session_id();
        rp.deliver(json::value(std::move(r)));
      },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

} // namespace allox::session_facets
