// SPDX-License-Identifier: Apache-2.0
#include "actors/agents.hpp"
#include "actors/command_list.hpp"

#include "actors/agents_detail.hpp"

#include "actors/blocking.hpp"
#include "actors/dump.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "messages/commands/lists.hpp"
#include "messages/ids.hpp"

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <type_traits>

namespace allox {

namespace agents_detail {

void spawn_agent(self_ptr self, agent_slot& slot,
                 std::vector<session_row> sessions,
                 std::vector<checkpoint_row> checkpoints,
                 std::map<std::string, std::vector<std::string>> fenced,
                 std::map<std::string, std::vector<run_row>> adopted) {
  agent_init init{slot.row,        std::move(sessions), std::move(checkpoints),
                  slot.restarts,   self->state.paths,   self->state.metadata,
                  self->address(), self->state.exec,    std::move(fenced),
                  slot.forks};
  init.adopted_runs = std::move(adopted);
  slot.handle =
      self->spawn<caf::linked + caf::monitored>(agent, std::move(init));
  slot.status = child_status::running;
}

} // namespace agents_detail

namespace {

using namespace agents_detail;

caf::error not_found(const std::string& aid) {
  return make_error(errc::not_found, "agent does not exist: " + aid);
}

using promise = caf::typed_response_promise<json::value>;

/// What `Command`'s AGENT replies, and the promise of it.
template <class Command>
using reply_of = cmd::reply_t<Command>;
template <class Command>
using promise_of = caf::typed_response_promise<reply_of<Command>>;

/// agent.delete: the slot shows `deleting` until the agent answers; it is
/// dropped once the agent is deleted, and runs again if the delete failed.
void delete_agent(self_ptr self, agent_slot& slot, cmd::agent_delete c,
                  promise_of<cmd::agent_delete> rp) {
  auto aid = slot.row.agent_id;
  slot.status = child_status::deleting;
  self->request(slot.handle, caf::infinite, std::move(c))
      .then(
          [self, rp, aid](agent_deleted& v) mutable {
            self->state.agents.erase(aid);
            rp.deliver(std::move(v));
          },
          [self, rp, aid](caf::error& err) mutable {
            if (auto it = self->state.agents.find(aid);
                it != self->state.agents.end())
              it->second.status = child_status::running;
            rp.deliver(std::move(err));
          });
}

/// Forwards a command to its running agent actor by delegation, except
/// agent.delete, which this actor watches to drop the slot.
template <class Command>
caf::result<reply_of<Command>> forward(self_ptr self, agent_slot& slot,
                                       const Command& c) {
  if constexpr (std::is_same_v<Command, cmd::agent_delete>) {
    auto rp = self->make_response_promise<agent_deleted>();
    delete_agent(self, slot, c, rp);
    return rp;
  } else {
    return self->delegate(slot.handle, c);
  }
}

/// Sends on a command that waited for its agent's creation. A waiting
/// agent.create is answered by the creation itself.
template <class Command>
void resume(self_ptr self, Command c, promise_of<Command> rp) {
  if constexpr (std::is_same_v<Command, cmd::agent_create>) {
    rp.deliver(describe_agent_workspace(c.agent_id));
  } else {
    auto& slot = self->state.agents[agent_of(c)];
    if constexpr (std::is_same_v<Command, cmd::agent_delete>)
      delete_agent(self, slot, std::move(c), std::move(rp));
    else
      self->request(slot.handle, caf::infinite, std::move(c))
          .then(
              [rp](reply_of<Command>& v) mutable { rp.deliver(std::move(v)); },
              [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
  }
}

/// Queues a command behind the creation of its agent.
template <class Command>
caf::result<reply_of<Command>> queue(self_ptr self, const Command& c) {
  auto rp = self->make_response_promise<reply_of<Command>>();
  self->state.creating[agent_of(c)].push_back(
      [self, c, rp](const caf::error& err) mutable {
        if (err)
          rp.deliver(err);
        else
          resume(self, std::move(c), std::move(rp));
      });
  return rp;
}

/// The agent's creation ended: every queued command is sent on, or
/// answered with `err`.
void answer_queued(self_ptr self, const std::string& aid,
                   const caf::error& err) {
  auto calls = std::move(self->state.creating[aid]);
  self->state.creating.erase(aid);
  for (auto& call : calls)
    call(err);
}

/// Creates a new agent (directories, row, audit when `record`) and then
/// spawns its actor; requests for the agent queue behind the creation.
void create_agent(self_ptr self, const std::string& aid,
                  const std::string& origin, bool record) {
  auto paths = self->state.paths;
  run_blocking<step_done>(self,
                          [paths, aid]() -> expected<step_done> {
                            if (auto err = ensure_agent_dirs(paths, aid))
                              return err;
                            return step_done{};
                          })
      .then(
          [self, aid, origin, record](step_done&) {
            agent_row row{aid, os::now_ns(), false};
            metadata_write w;
            w.put_agents.push_back(row);
            if (record)
              w.audit.push_back(
                  {row.created_ns,
                   "agent.create",
                   aid,
                   {},
                   json::serialize(json::object{{"origin", origin}})});
            self->request(self->state.metadata, caf::infinite, atom::write_v,
                          std::move(w))
                .then(
                    [self, aid, row](caf::ok_atom) {
                      auto& slot = self->state.agents[aid];
                      slot.row = row;
                      spawn_agent(self, slot, {}, {});
                      answer_queued(self, aid, caf::none);
                    },
                    [self, aid](caf::error& err) {
                      ++self->state.failures;
                      answer_queued(self, aid, err);
                    });
          },
          [self, aid](caf::error& err) {
            ++self->state.failures;
            answer_queued(self, aid, err);
          });
}

caf::result<store_initialized> handle(self_ptr self,
                                      const cmd::store_initialize&) {
  auto rp = self->make_response_promise<store_initialized>();
  auto paths = self->state.paths;
  run_blocking<step_done>(
      self,
      [paths]() -> expected<step_done> {
        if (auto err = os::require_btrfs(paths.root))
          return err;
        if (auto err = os::ensure_managed_dir(paths.agents_dir(), 0755,
                                              "agents directory"))
          return err;
        return step_done{};
      })
      .then(
          [self, rp, paths](step_done&) mutable {
            metadata_write w;
            w.audit.push_back({os::now_ns(), "store.initialize", {}, {}, "{}"});
            self->request(self->state.metadata, caf::infinite, atom::write_v,
                          std::move(w))
                .then(
                    [rp, paths](caf::ok_atom) mutable {
                      // Recovery runs before the daemon serves; a running
                      // daemon has nothing left to recover.
                      rp.deliver(store_initialized{paths.root, {}});
                    },
                    [rp](caf::error& err) mutable { rp.deliver(err); });
          },
          [rp](caf::error& err) mutable { rp.deliver(err); });
  return rp;
}

/// Re-spawns a failed agent (its sessions died with it, linked) from its
/// own rows of the catalog.
void restart_agent(self_ptr self, const std::string& aid) {
  self->request(self->state.metadata, caf::infinite, atom::load_v, aid)
      .then(
          [self, aid](catalog_snapshot& snap) {
            auto pos = self->state.agents.find(aid);
            if (pos == self->state.agents.end() || pos->second.handle)
              return;
            std::vector<session_row> sessions;
            // The agent's row has changed since (its policy).
            for (auto& a : snap.agents)
              pos->second.row.policy = a.policy;
            for (auto& s : snap.sessions)
              if (!s.deleting)
                sessions.push_back(std::move(s));
            spawn_agent(self, pos->second, std::move(sessions),
                        std::move(snap.checkpoints));
          },
          [self, aid](caf::error& err) {
            log::error("agents",
                       "cannot restart agent " + aid + ": " + message_of(err));
            if (auto pos = self->state.agents.find(aid);
                pos != self->state.agents.end())
              pos->second.status = child_status::failed;
          });
}

/// An agent actor failed (supervision::on_child_down decided): audited,
/// then re-spawned or, past its budget, left failed.
void on_agent_failed(
    self_ptr self,
    supervision::child_down<decltype(agents_state::agents)>& down,
    const caf::error& why) {
  auto aid = down.child->first;
  auto reason = message_of(why);
  metadata_write w;
  w.audit.push_back({os::now_ns(),
                     "agent.actor_failed",
                     aid,
                     {},
                     json::serialize(json::object{{"reason", reason}})});
  caf::anon_send(self->state.metadata, atom::write_v, std::move(w));
  if (down.decision == supervision::down_decision::give_up) {
    log::error("agents", "agent " + aid + " failed too often: " + reason);
    return;
  }
  log::warn("agents", "agent " + aid + " failed (" + reason +
                          "); restarting from the catalog");
  restart_agent(self, aid);
}

caf::result<agent_ids> handle(self_ptr self, const cmd::agent_list&) {
  agent_ids r;
  for (const auto& [aid, slot] : self->state.agents)
    r.ids.push_back(aid);
  return r;
}

/// Routes a command for one agent: queued while the agent is being
/// created, forwarded to its actor once it runs. agent.create and
/// session.create create a missing agent first (session.create without its
/// own agent.create record, which the AGENT writes with the session's, in
/// the prototype's order). Bad input creates nothing: the decoder refused
/// a bad session id before the command was sent.
template <class Command>
caf::result<reply_of<Command>> route(self_ptr self, const Command& c) {
  auto& st = self->state;
  const auto& aid = agent_of(c);
  if (st.creating.count(aid) > 0)
    return queue(self, c);
  auto it = st.agents.find(aid);
  if (it == st.agents.end()) {
    constexpr bool create = std::is_same_v<Command, cmd::agent_create>;
    if constexpr (create || std::is_same_v<Command, cmd::session_create>) {
      auto result = queue(self, c);
      create_agent(self, aid, c.origin, create);
      return result;
    } else {
      return not_found(aid);
    }
  }
  auto& slot = it->second;
  if (slot.status == child_status::deleting)
    return make_error(errc::conflict, "agent is being deleted: " + aid);
  if (!slot.handle)
    return make_error(errc::internal, "agent actor is not running: " + aid);
  return forward(self, slot, c);
}

/// What AGENTS does with a command: answers a store-level one itself
/// (handle), routes an agent's to its AGENT.
template <class Command>
caf::result<reply_of<Command>> answer(self_ptr self, const Command& c) {
  if constexpr (std::is_same_v<Command, cmd::store_initialize> ||
                std::is_same_v<Command, cmd::agent_list>)
    return handle(self, c);
  else
    return route(self, c);
}

using supervision::serve;

} // namespace

agents_actor::behavior_type agents(self_ptr self, store::layout paths,
                                   metadata_actor metadata,
                                   caf::actor_addr parent,
                                   std::shared_ptr<const exec_config> exec) {
  self->state.exec = std::move(exec);
  self->state.paths = std::move(paths);
  self->state.metadata = std::move(metadata);
  self->state.started = std::chrono::steady_clock::now();
  // Only the SUPERVISOR's exit stops the registry, and every agent with
  // it; an agent that ends goes through on_agent_failed if it failed.
  supervision::supervise(self, std::move(parent), &agents_state::agents,
                         "agents", on_agent_failed);
  // Store-level commands are answered here, an agent's commands routed
  // to its AGENT (queued while it is created); both lists through serve.
  return behavior_of<agents_actor::behavior_type>(
      caf::detail::tl_concat_t<cmd::agents_commands, cmd::agent_commands>{},
      [self](const auto& c) {
        return serve(self, c,
                     [](self_ptr s, const auto& x) { return answer(s, x); });
      },
      [self](atom::load) -> caf::result<recovery_summary> {
        return recover(self);
      },
      [self](atom::session, const std::string& aid,
             const std::string& sid) -> caf::result<session_actor> {
        auto it = self->state.agents.find(aid);
        if (it == self->state.agents.end() || !it->second.handle)
          return make_error(errc::not_found,
                            "session does not exist: " + session_key(aid, sid));
        return self->delegate(it->second.handle, atom::session_v, sid);
      },
      [self](atom::stats) -> caf::result<actor_stats> {
        auto& st = self->state;
        actor_stats s;
        s.kind = "agents";
        s.top()
            .fact("state", st.ready ? "idle" : "starting")
            .gauge("mailbox", self->mailbox().size());
        s.group("resources").fact("store", st.paths.root);
        s.group("counters")
            .counter("requests", st.requests)
            .counter("failures", st.failures)
            .gauge("agents", st.agents.size());
        s.top().gauge("uptime_ms", uptime_ms(st.started));
        std::vector<agent_actor> live;
        std::vector<actor_stats> stopped;
        for (auto& [aid, slot] : st.agents) {
          if (slot.handle) {
            live.push_back(slot.handle);
            continue;
          }
          auto& a = stopped.emplace_back();
          a.kind = "agent";
          a.agent_id = aid;
          a.top().fact("state", to_string(slot.status));
        }
        return stats_with_children(self, std::move(s), live,
                                   std::move(stopped));
      });
}

} // namespace allox
