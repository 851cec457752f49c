// SPDX-License-Identifier: Apache-2.0
#include "actors/supervisor.hpp"

#include <algorithm>

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
  }
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.stopping) {
      // Sessions queue their last catalog writes on their way out; the
      // catalog closes only after the last of them has ended.
      if (dm.source == st.agents.address()) {
        self->send_exit(st.metadata, st.stop_reason);
        if (st.tracker)
          self->send_exit(st.tracker, st.stop_reason);
      } else if (dm.source == st.metadata.address())
        self->quit(st.stop_reason);
      return;
    }
    // A core actor that ended is not waited for at a later stop.
    if (dm.source == st.agents.address())
      st.agents_ended = true;
    else if (dm.source == st.metadata.address())
      st.metadata_ended = true;
    if (!dm.reason || dm.reason == caf::exit_reason::user_shutdown)
      return;
    auto what = "a core actor failed: " + message_of(dm.reason);
    log::error("supervisor", what);
    if (st.init.on_fatal)
      st.init.on_fatal(what);
  });
  self->set_exit_handler([self](caf::exit_msg& em) {
    auto& st = self->state;
    auto is_front = [&st](const caf::actor_addr& a) {
      return std::any_of(st.fronts.begin(), st.fronts.end(),
                         [&a](const auto& f) { return f.address() == a; });
    };
    if (em.source == st.metadata.address() ||
        em.source == st.agents.address() || em.source == st.rpc.address() ||
        is_front(em.source) ||
        (st.tracker && em.source == st.tracker.address()))
      return; // the down handler reports it
    if (st.stopping)
      return;
    // Children stop on their own exit handlers, parents after their
    // children: AGENTS waits for its agents, each AGENT for its sessions.
    st.stopping = true;
    st.stop_reason = em.reason;
    if (st.rpc)
      self->send_exit(st.rpc, em.reason);
    for (const auto& f : st.fronts)
      self->send_exit(f, em.reason);
    if (st.metadata_ended)
      self->quit(em.reason);
    else if (st.agents_ended)
      self->send_exit(st.metadata, em.reason);
    else
      self->send_exit(st.agents, em.reason);
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
