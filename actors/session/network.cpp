// SPDX-License-Identifier: Apache-2.0
// The network facet of the SESSION actor: proxy mode's namespace at the
// egress broker (guest/net/), network.status, and the audit trail of
// every connection attempt the broker relays or refuses.
//
//   first proxy run -> make_proxy_namespace (~1 ms, once) -> broker.attach
//   session.configure egress -> broker.set_policy (new connections)
//   mode leaves proxy / actor ends -> broker.detach (connections closed)
//   broker loop: attempt ended -> egress_attempt -> audit batch -> catalog
#include "actors/session/handlers.hpp"
#include "guest/log.hpp"
#include "guest/net/netns.hpp"
#include "guest/net/port_connect.hpp"

#include <caf/send.hpp>

namespace allox::session_facets {
namespace {

/// The policy of egress lists.
expected<net::egress_policy> egress_policy_of(const egress_lists& egress) {
  return net::egress_policy::parse(egress.allow, egress.deny);
}

/// Commits the pending records, one batch at a time.
void flush_egress(self_ptr self) {
  auto& st = self->state;
  if (st.egress_committing || st.egress_pending.empty())
    return;
  st.egress_committing = true;
  metadata_write w;
  // An attempt's record is worth a commit, not an fsync: a crash loses at
  // most the last batch, and the connections with it.
  w.durable = false;
  w.audit.swap(st.egress_pending);
  commit(
      self, std::move(w),
      [self] {
        self->state.egress_committing = false;
        flush_egress(self);
      },
      [self](caf::error err) {
        self->state.egress_committing = false;
        log::warn("session", "egress audit of " + self->state.key() +
                                 " not written: " + message_of(err));
        flush_egress(self);
      });
}

} // namespace

caf::error check_egress(const egress_lists& egress) {
  auto p = egress_policy_of(egress);
  return p ? caf::none : p.error();
}

expected<std::shared_ptr<os::unique_fd>> ensure_proxy(self_ptr self) {
  auto& st = self->state;
  if (st.proxy)
    return st.proxy->ns;
  const auto& cfg = *st.runs.config;
  if (!cfg.broker)
    return make_error(errc::unsupported,
                      "proxy networking is not available on this daemon");
  auto policy = egress_policy_of(effective_settings(self).egress);
  if (!policy)
    return policy.error();
  // About a millisecond, once per session and mode change: unshare and
  // one socket, not worth a thread hop (measured in docs/benchmarks.md).
  auto made = net::make_proxy_namespace();
  if (!made)
    return made.error();
  auto a = std::make_unique<proxy_attachment>();
  a->broker = cfg.broker;
  a->key = st.key();
  a->inode = made->inode;
  a->ns = std::make_shared<os::unique_fd>(std::move(made->ns));
  // The broker's loop thread reports here; a weak address, so a session
  // that has ended is simply not told.
  auto addr = self->address();
  a->counters =
      cfg.broker->attach(a->key, std::move(made->listener), std::move(*policy),
                         [addr](net::egress_event e) {
                           if (auto hdl = caf::actor_cast<session_actor>(addr))
                             caf::anon_send(hdl, std::move(e));
                         });
  st.proxy = std::move(a);
  log::info("session", st.key() + ": proxy network namespace (inode " +
                           std::to_string(st.proxy->inode) + ")");
  return st.proxy->ns;
}

void apply_network_settings(self_ptr self) {
  auto& st = self->state;
  if (!st.proxy)
    return;
  auto settings = effective_settings(self);
  if (settings.network != "proxy") {
    st.proxy.reset(); // detaches: the broker closes its connections
    return;
  }
  if (auto p = egress_policy_of(settings.egress))
    st.proxy->broker->set_policy(st.proxy->key, std::move(*p));
}

network_status_view network_status_of(self_ptr self) {
  auto& st = self->state;
  auto settings = effective_settings(self);
  network_status_view v;
  v.agent_id = st.agent_id();
  v.session_id = st.session_id();
  v.mode = settings.network;
  v.active = v.mode == "inherit" || st.proxy != nullptr;
  if (v.mode == "proxy") {
    v.proxy_url = std::string{"http://127.0.0.1:3128"};
    v.egress = settings.egress;
  }
  if (st.proxy) {
    const auto& c = *st.proxy->counters;
    v.namespace_inode = static_cast<int64_t>(st.proxy->inode);
    v.connections =
        egress_connections{static_cast<int64_t>(c.open.load()),
                           static_cast<int64_t>(c.total.load()),
                           static_cast<int64_t>(c.refused.load()),
                           static_cast<int64_t>(c.failed.load()),
                           static_cast<int64_t>(c.bytes_sent.load()),
                           static_cast<int64_t>(c.bytes_received.load())};
  }
  return v;
}

// network.status: answered from the actor's state and the broker's
// counters (atomics): no round trip to the broker's loop.
caf::result<network_status_view> handle(self_ptr self,
                                        const cmd::network_status&) {
  if (!self->state.runs.config)
    return no_execution();
  if (auto err = require_alive(self))
    return err;
  return network_status_of(self);
}

// Audits one attempt as `network.connect` {host, port, address, allowed,
// kind, error?, bytes_sent, bytes_received, duration_ms}.
void on_egress_attempt(self_ptr self, const cmd::egress_attempt& e) {
  json::object fields{
      {"host", e.host},
      {"port", e.port},
      {"address", e.address},
      {"allowed", e.allowed},
      {"kind", e.kind},
      {"bytes_sent", static_cast<int64_t>(e.bytes_sent)},
      {"bytes_received", static_cast<int64_t>(e.bytes_received)},
      {"duration_ms", static_cast<int64_t>(e.duration_ms)}};
  if (!e.error.empty())
    fields["error"] = e.error;
  auto rec = audit(self, "network.connect", std::move(fields));
  rec.timestamp_ns = e.timestamp_ns;
  self->state.egress_pending.push_back(std::move(rec));
  flush_egress(self);
}

} // namespace allox::session_facets

namespace allox::session_facets {

// port.connect: the namespaces are found and joined on a thread of its own
// (cgroupfs, /proc and setns block, briefly); the socket goes to the front.
caf::result<socket_handle> handle(self_ptr self, const cmd::port_connect& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  if (auto err = require_alive(self))
    return err;
  if (c.port == 0)
    return make_error(errc::invalid_argument, "port must be 1..65535");
  const auto& tree = st.runs.config->cgroups;
  auto group = tree.session_group(st.agent_id(), st.session_id());
  auto mount = tree.mount();
  std::shared_ptr<os::unique_fd> ns;
  if (st.proxy)
    ns = st.proxy->ns;
  bool shared = effective_settings(self).network == "inherit";
  return answer_blocking<socket_handle>(
      self,
      [mount, group, ns, shared, port = c.port]() -> expected<socket_handle> {
        auto s = net::connect_in_group(mount, group, port, shared,
                                       ns ? ns->get() : -1);
        if (!s)
          return s.error();
        return socket_handle{s->release()};
      });
}

} // namespace allox::session_facets
