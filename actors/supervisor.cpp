// SPDX-License-Identifier: Apache-2.0
#include "actors/supervisor.hpp"

#include "actors/agents.hpp"
#include "actors/dump.hpp"
#include "actors/metadata.hpp"
#include "guest/log.hpp"
#if ALLOX_TRACKING
#include "actors/tracker.hpp"
#endif

#include <caf/actor_cast.hpp>
#include <caf/exit_reason.hpp>
#include <caf/stateful_actor.hpp>

namespace allox {

namespace {

using self_ptr = supervisor_actor::stateful_pointer<supervisor_state>;

/// The stop order: fronts and AGENTS first, the actors they write to after.
constexpr uint8_t first_stage = 0;
constexpr uint8_t catalog_stage = 1;

/// Adds `child` to the supervised table (no-op for a null handle).
template <class Handle>
void supervise_child(self_ptr self, std::string name, const Handle& child,
                     uint8_t stage) {
  if (!child)
    return;
  core_slot slot;
  slot.handle = caf::actor_cast<caf::actor>(child);
  slot.budget = supervision::restart_budget{0};
  slot.stop_stage = stage;
  self->state.children.emplace_back(std::move(name), std::move(slot));
}

/// True for an exit that comes over a child's link (its down message
/// decides), false for the stop the daemon sends.
bool from_child(const supervisor_state& st, const caf::actor_addr& source) {
  for (const auto& f : st.fronts)
    if (f.address() == source)
      return true;
  return source == st.metadata.address() || source == st.agents.address() ||
         source == st.rpc.address() ||
         (st.tracker && source == st.tracker.address());
}

} // namespace

supervisor_actor::behavior_type
supervisor(supervisor_actor::stateful_pointer<supervisor_state> self,
           supervisor_init init) {
  {
    auto& st = self->state;
    st.init = std::move(init);
    st.started = std::chrono::steady_clock::now();
    st.metadata = self->spawn<caf::detached + caf::linked + caf::monitored>(
        metadata, st.init.catalog, st.init.paths.database());
    st.init.catalog.reset();
#if ALLOX_TRACKING
    // The TRACKER first: every session gets its handle with the execution
    // settings.
    if (st.init.exec && st.init.exec->tracking == "ebpf") {
      tracker_init ti;
      ti.probe.ring_bytes = st.init.exec->tracker_ring_bytes;
      ti.probe.writes = st.init.exec->write_provenance;
      st.tracker = self->spawn<caf::detached + caf::linked + caf::monitored>(
          tracker, std::move(ti));
      auto exec = std::make_shared<exec_config>(*st.init.exec);
      exec->tracker = st.tracker;
      st.init.exec = std::move(exec);
    }
#endif
    st.agents = self->spawn<caf::linked + caf::monitored>(
        agents, st.init.paths, st.metadata, self->address(), st.init.exec);
    core_handles core{caf::actor_cast<supervisor_actor>(self), st.agents,
                      st.metadata, st.init.exec};
    if (st.init.spawn_front)
      st.rpc = st.init.spawn_front(self, core);
    if (st.init.spawn_more_fronts)
      st.fronts = st.init.spawn_more_fronts(self, core);
    supervise_child(self, "metadata", st.metadata, catalog_stage);
    supervise_child(self, "tracker", st.tracker, catalog_stage);
    supervise_child(self, "agents", st.agents, first_stage);
    supervise_child(self, "rpc", st.rpc, first_stage);
    for (const auto& f : st.fronts)
      supervise_child(self, "front", f, first_stage);
  }
  // Supervision (actors/supervision.hpp) with a budget of zero: without
  // its catalog, registry or a front the daemon cannot keep its promises,
  // so a failed child stops it and the service manager restarts it
  // (start-up recovery then runs).
  self->set_down_handler([self](caf::down_msg& dm) {
    auto down = supervision::on_child_down(self, self->state.children, dm);
    if (down.decision != supervision::down_decision::give_up)
      return;
    auto what = "a core actor failed (" + down.child->first +
                "): " + message_of(dm.reason);
    log::error("supervisor", what);
    if (self->state.init.on_fatal)
      self->state.init.on_fatal(what);
  });
  self->set_exit_handler([self](caf::exit_msg& em) {
    auto& st = self->state;
    if (st.stopping || from_child(st, em.source))
      return;
    supervision::stop_children(self, st.children, em.reason);
  });
  return {
      [self](atom::rpc) { return self->state.rpc; },
      [self](atom::agent) { return self->state.agents; },
      [self](atom::stats) -> caf::result<actor_stats> {
        auto& st = self->state;
        actor_stats s;
        s.kind = "supervisor";
        s.top()
            .fact("state", "idle")
            .gauge("mailbox", self->mailbox().size())
            .gauge("uptime_ms", uptime_ms(st.started));
        std::vector<stats_client_actor> children{
            caf::actor_cast<stats_client_actor>(st.metadata)};
        if (st.rpc)
          children.push_back(caf::actor_cast<stats_client_actor>(st.rpc));
        children.insert(children.end(), st.fronts.begin(), st.fronts.end());
        children.push_back(caf::actor_cast<stats_client_actor>(st.agents));
        if (st.tracker)
          children.push_back(caf::actor_cast<stats_client_actor>(st.tracker));
        return stats_with_children(self, std::move(s), children);
      },
  };
}

} // namespace allox
