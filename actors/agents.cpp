// SPDX-License-Identifier: Apache-2.0
#include "actors/agents.hpp"

#include "actors/blocking.hpp"
#include "actors/dump.hpp"
#include "actors/failures.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "guest/store/prototype_import.hpp"
#include "guest/store/reconcile.hpp"
#include "guest/store/run_recovery.hpp"
#include "messages/ids.hpp"

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <set>
#include <type_traits>

namespace allox {

namespace {

using self_ptr = agents_actor::stateful_pointer<agents_state>;

/// Adds the prototype's rows to what start-up recovery sees, and to the
/// write that persists them.
void merge_import(catalog_snapshot& snap, const store::prototype_store& proto,
                  metadata_write& write) {
  std::set<std::pair<std::string, std::string>> known;
  for (const auto& s : snap.sessions)
    known.insert({s.agent_id, s.session_id});
  std::set<std::string> agents;
  for (const auto& a : snap.agents)
    agents.insert(a.agent_id);
  auto now = os::now_ns();
  for (auto a : proto.rows.agents) {
    if (!agents.insert(a.agent_id).second)
      continue;
    a.created_ns = now;
    snap.agents.push_back(a);
    write.put_agents.push_back(a);
  }
  for (auto s : proto.rows.sessions) {
    if (known.count({s.agent_id, s.session_id}) > 0)
      continue; // the catalog already knows better
    s.created_ns = now;
    snap.sessions.push_back(s);
    write.put_sessions.push_back(s);
    if (s.share_policy)
      write.set_share_policies.push_back(
          {s.agent_id, s.session_id, s.share_policy});
    for (const auto& c : proto.rows.checkpoints)
      if (c.agent_id == s.agent_id && c.session_id == s.session_id) {
        snap.checkpoints.push_back(c);
        write.put_checkpoints.push_back(c);
      }
  }
  for (const auto& j : proto.rows.journals)
    snap.journals.push_back(j);
  write.audit = proto.events;
}

void spawn_agent(self_ptr self, agent_slot& slot,
                 std::vector<session_row> sessions,
                 std::vector<checkpoint_row> checkpoints,
                 std::map<std::string, std::vector<std::string>> fenced = {}) {
  agent_init init{slot.row,        std::move(sessions), std::move(checkpoints),
                  slot.restarts,   self->state.paths,   self->state.metadata,
                  self->address(), self->state.exec,    std::move(fenced),
                  slot.forks};
  slot.handle =
      self->spawn<caf::linked + caf::monitored>(agent, std::move(init));
  slot.status = child_status::running;
}

caf::error not_found(const std::string& aid) {
  return make_error(errc::not_found, "agent does not exist: " + aid);
}

using promise = caf::typed_response_promise<json::value>;

/// agent.delete: the slot shows `deleting` until the agent answers; it is
/// dropped once the agent is deleted, and runs again if the delete failed.
void delete_agent(self_ptr self, agent_slot& slot, cmd::agent_delete c,
                  promise rp) {
  auto aid = slot.row.agent_id;
  slot.status = child_status::deleting;
  self->request(slot.handle, caf::infinite, std::move(c))
      .then(
          [self, rp, aid](json::value& v) mutable {
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
caf::result<json::value> forward(self_ptr self, agent_slot& slot,
                                 const Command& c) {
  if constexpr (std::is_same_v<Command, cmd::agent_delete>) {
    auto rp = self->make_response_promise<json::value>();
    delete_agent(self, slot, c, rp);
    return rp;
  } else {
    return self->delegate(slot.handle, c);
  }
}

/// Sends on a command that waited for its agent's creation. A waiting
/// agent.create is answered by the creation itself.
template <class Command>
void resume(self_ptr self, Command c, promise rp) {
  if constexpr (std::is_same_v<Command, cmd::agent_create>) {
    rp.deliver(json::value(describe_agent_workspace(c.agent_id)));
  } else {
    auto& slot = self->state.agents[agent_of(c)];
    if constexpr (std::is_same_v<Command, cmd::agent_delete>)
      delete_agent(self, slot, std::move(c), std::move(rp));
    else
      self->request(slot.handle, caf::infinite, std::move(c))
          .then([rp](json::value& v) mutable { rp.deliver(std::move(v)); },
                [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
  }
}

/// Queues a command behind the creation of its agent.
template <class Command>
caf::result<json::value> queue(self_ptr self, const Command& c) {
  auto rp = self->make_response_promise<json::value>();
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
  run_blocking(self,
               [paths, aid]() -> expected<json::value> {
                 if (auto err = ensure_agent_dirs(paths, aid))
                   return err;
                 return json::value();
               })
      .then(
          [self, aid, origin, record](json::value&) {
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

caf::result<json::value> handle_store_initialize(self_ptr self,
                                                 const cmd::store_initialize&) {
  auto rp = self->make_response_promise<json::value>();
  auto paths = self->state.paths;
  run_blocking(self,
               [paths]() -> expected<json::value> {
                 if (auto err = os::require_btrfs(paths.root))
                   return err;
                 if (auto err = os::ensure_managed_dir(paths.agents_dir(), 0755,
                                                       "agents directory"))
                   return err;
                 return json::value();
               })
      .then(
          [self, rp, paths](json::value&) mutable {
            metadata_write w;
            w.audit.push_back({os::now_ns(), "store.initialize", {}, {}, "{}"});
            self->request(self->state.metadata, caf::infinite, atom::write_v,
                          std::move(w))
                .then(
                    [rp, paths](caf::ok_atom) mutable {
                      // Recovery runs before the daemon serves; a running
                      // daemon has nothing left to recover.
                      rp.deliver(json::value(
                          json::object{{"root", paths.root},
                                       {"recovered_sessions", json::array{}}}));
                    },
                    [rp](caf::error& err) mutable { rp.deliver(err); });
          },
          [rp](caf::error& err) mutable { rp.deliver(err); });
  return rp;
}

/// Removes intent records whose rows the start-up commit made durable.
void clear_intents(self_ptr self, std::vector<store::intent_ref> intents) {
  if (intents.empty())
    return;
  auto paths = self->state.paths;
  run_blocking(self, [paths, intents]() -> expected<json::value> {
    if (auto err = store::clear_create_intents(paths, intents))
      log::warn("reconcile", message_of(err));
    return json::value();
  }).then([](json::value&) {}, [](caf::error&) {});
}

caf::result<json::value> load(self_ptr self) {
  auto rp = self->make_response_promise<json::value>();
  self->request(self->state.metadata, caf::infinite, atom::load_v)
      .then(
          [self, rp](catalog_snapshot& snap) mutable {
            auto paths = self->state.paths;
            auto result = std::make_shared<store::reconcile_result>();
            auto exec = self->state.exec;
            run_blocking(
                self,
                [paths, snap, result, exec]() mutable -> expected<json::value> {
                  if (auto err = os::require_btrfs(paths.root))
                    return err;
                  // Runs first: what a crash interrupted, and the rows of
                  // older stores (state.json files), once.
                  metadata_write imported;
                  if (exec) {
                    auto fenced =
                        store::recover_runs(snap, exec->audit_root, imported);
                    if (!fenced)
                      return fenced.error();
                    result->fenced_runs = std::move(*fenced);
                  }
                  // A store written by the prototype, once.
                  json::value import_summary;
                  if (!snap.prototype_imported) {
                    auto proto = store::read_prototype_store(paths);
                    if (!proto)
                      return proto.error();
                    if (proto->found) {
                      merge_import(snap, *proto, imported);
                      import_summary = proto->summary;
                      log::info("import", "adopting a store written by the "
                                          "prototype: " +
                                              json::serialize(proto->summary));
                    }
                    imported.mark_prototype_imported = true;
                  }
                  auto r = store::reconcile(paths, snap);
                  if (!r)
                    return r.error();
                  r->fenced_runs = std::move(result->fenced_runs);
                  *result = std::move(*r);
                  if (!import_summary.is_null()) {
                    result->changes.audit.insert(
                        result->changes.audit.begin(),
                        {os::now_ns(),
                         "store.import",
                         {},
                         {},
                         json::serialize(import_summary)});
                    result->summary["imported"] = import_summary;
                  }
                  // One transaction: the imported rows, then what
                  // recovery changed on disk and in them.
                  append(imported, std::move(result->changes));
                  result->changes = std::move(imported);
                  return json::value();
                })
                .then(
                    [self, rp, result](json::value&) mutable {
                      auto changes = std::move(result->changes);
                      changes.audit.push_back(
                          {os::now_ns(), "store.initialize", {}, {}, "{}"});
                      self->request(self->state.metadata, caf::infinite,
                                    atom::write_v, std::move(changes))
                          .then(
                              [self, rp, result](caf::ok_atom) mutable {
                                clear_intents(
                                    self, std::move(result->settled_intents));
                                std::map<std::string, std::vector<session_row>>
                                    by_agent;
                                std::map<std::string,
                                         std::vector<checkpoint_row>>
                                    checkpoints;
                                for (auto& s : result->sessions)
                                  by_agent[s.agent_id].push_back(std::move(s));
                                for (auto& c : result->checkpoints)
                                  checkpoints[c.agent_id].push_back(
                                      std::move(c));
                                for (auto& a : result->agents) {
                                  auto& slot = self->state.agents[a.agent_id];
                                  slot.row = a;
                                  std::map<std::string,
                                           std::vector<std::string>>
                                      fenced;
                                  for (auto& [key, ids] : result->fenced_runs)
                                    if (key.first == a.agent_id)
                                      fenced[key.second] = ids;
                                  spawn_agent(
                                      self, slot,
                                      std::move(by_agent[a.agent_id]),
                                      std::move(checkpoints[a.agent_id]),
                                      std::move(fenced));
                                }
                                self->state.ready = true;
                                auto summary = std::move(result->summary);
                                summary["agents"] = result->agents.size();
                                summary["sessions"] = result->sessions.size();
                                summary["checkpoints"] =
                                    result->checkpoints.size();
                                rp.deliver(json::value(std::move(summary)));
                              },
                              [rp](caf::error& err) mutable {
                                rp.deliver(err);
                              });
                    },
                    [rp](caf::error& err) mutable { rp.deliver(err); });
          },
          [rp](caf::error& err) mutable { rp.deliver(err); });
  return rp;
}

/// True once no agent actor lives.
bool no_live_agents(self_ptr self) {
  for (auto& [aid, slot] : self->state.agents)
    if (slot.handle)
      return false;
  return true;
}

void on_agent_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  if (st.stopping) {
    for (auto& [aid, slot] : st.agents)
      if (slot.handle && slot.handle.address() == dm.source)
        slot.handle = nullptr;
    if (no_live_agents(self))
      self->quit(st.stop_reason);
    return;
  }
  for (auto it = st.agents.begin(); it != st.agents.end(); ++it) {
    auto& slot = it->second;
    if (!slot.handle || slot.handle.address() != dm.source)
      continue;
    if (!dm.reason || dm.reason == caf::exit_reason::user_shutdown ||
        slot.status == child_status::deleting) {
      slot.handle = nullptr;
      return;
    }
    auto aid = it->first;
    bool within_budget = within_restart_budget(slot.recent_failures);
    slot.handle = nullptr;
    auto reason = message_of(dm.reason);
    metadata_write w;
    w.audit.push_back({os::now_ns(),
                       "agent.actor_failed",
                       aid,
                       {},
                       json::serialize(json::object{{"reason", reason}})});
    caf::anon_send(st.metadata, atom::write_v, std::move(w));
    if (!within_budget) {
      slot.status = child_status::failed;
      log::error("agents", "agent " + aid + " failed too often: " + reason);
      return;
    }
    ++slot.restarts;
    log::warn("agents", "agent " + aid + " failed (" + reason +
                            "); restarting from the catalog");
    // Its sessions died with it (linked); re-spawn all from their rows.
    self->request(st.metadata, caf::infinite, atom::load_v)
        .then(
            [self, aid](catalog_snapshot& snap) {
              auto pos = self->state.agents.find(aid);
              if (pos == self->state.agents.end() || pos->second.handle)
                return;
              std::vector<session_row> sessions;
              std::vector<checkpoint_row> checkpoints;
              // The agent's row has changed since (its policy).
              for (auto& a : snap.agents)
                if (a.agent_id == aid)
                  pos->second.row.policy = a.policy;
              for (auto& s : snap.sessions)
                if (s.agent_id == aid && !s.deleting)
                  sessions.push_back(std::move(s));
              for (auto& c : snap.checkpoints)
                if (c.agent_id == aid)
                  checkpoints.push_back(std::move(c));
              spawn_agent(self, pos->second, std::move(sessions),
                          std::move(checkpoints));
            },
            [self, aid](caf::error& err) {
              log::error("agents", "cannot restart agent " + aid + ": " +
                                       message_of(err));
              if (auto pos = self->state.agents.find(aid);
                  pos != self->state.agents.end())
                pos->second.status = child_status::failed;
            });
    return;
  }
}

caf::result<json::value> handle_agent_list(self_ptr self,
                                           const cmd::agent_list&) {
  json::array ids;
  for (const auto& [aid, slot] : self->state.agents)
    ids.emplace_back(aid);
  return json_reply(json::object{{"agent_ids", std::move(ids)}});
}

/// Routes a command for one agent: queued while the agent is being
/// created, forwarded to its actor once it runs. agent.create and
/// session.create create a missing agent first (session.create without its
/// own agent.create record, which the AGENT writes with the session's, in
/// the prototype's order). Bad input creates nothing: the decoder refused
/// a bad session id before the command was sent.
template <class Command>
caf::result<json::value> route(self_ptr self, const Command& c) {
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

/// Serves one command: counted, and named for the failure log.
template <class Command, class Handler>
caf::result<json::value> serve(self_ptr self, const Command& c,
                               Handler handler) {
  ++self->state.requests;
  return while_handling(self->state.handling, Command::name,
                        [&] { return handler(self, c); });
}

} // namespace

agents_actor::behavior_type agents(self_ptr self, store::layout paths,
                                   metadata_actor metadata,
                                   caf::actor_addr parent,
                                   std::shared_ptr<const exec_config> exec) {
  self->state.exec = std::move(exec);
  self->state.paths = std::move(paths);
  self->state.metadata = std::move(metadata);
  self->state.started = std::chrono::steady_clock::now();
  self->set_down_handler(
      [self](caf::down_msg& dm) { on_agent_down(self, dm); });
  self->set_exception_handler([self](std::exception_ptr& ep) {
    return actor_failed(ep, "agents", self->state.handling);
  });
  self->set_exit_handler([self, parent](caf::exit_msg& em) {
    if (em.source != parent)
      return; // a child; the down handler decides about restarts
    for (auto& [aid, slot] : self->state.agents)
      if (slot.handle)
        self->send_exit(slot.handle, em.reason);
    self->state.stopping = true;
    self->state.stop_reason = em.reason;
    if (no_live_agents(self))
      self->quit(self->state.stop_reason);
  });
  return {
      [self](atom::load) -> caf::result<json::value> { return load(self); },
      [self](const cmd::store_initialize& c) {
        return serve(self, c, handle_store_initialize);
      },
      [self](const cmd::agent_list& c) {
        return serve(self, c, handle_agent_list);
      },
      [self](const cmd::agent_create& c) {
        return serve(self, c, route<cmd::agent_create>);
      },
      [self](const cmd::agent_describe& c) {
        return serve(self, c, route<cmd::agent_describe>);
      },
      [self](const cmd::agent_delete& c) {
        return serve(self, c, route<cmd::agent_delete>);
      },
      [self](const cmd::session_create& c) {
        return serve(self, c, route<cmd::session_create>);
      },
      [self](const cmd::session_fork& c) {
        return serve(self, c, route<cmd::session_fork>);
      },
      [self](const cmd::session_list& c) {
        return serve(self, c, route<cmd::session_list>);
      },
      [self](const cmd::session_delete_request& c) {
        return serve(self, c, route<cmd::session_delete_request>);
      },
      [self](const cmd::agent_debug_fault& c) {
        return serve(self, c, route<cmd::agent_debug_fault>);
      },
      [self](const cmd::policy_get& c) {
        return serve(self, c, route<cmd::policy_get>);
      },
      [self](const cmd::policy_set& c) {
        return serve(self, c, route<cmd::policy_set>);
      },
      [self](atom::session, const std::string& aid,
             const std::string& sid) -> caf::result<session_actor> {
        auto it = self->state.agents.find(aid);
        if (it == self->state.agents.end() || !it->second.handle)
          return make_error(errc::not_found,
                            "session does not exist: " + session_key(aid, sid));
        return self->delegate(it->second.handle, atom::session_v, sid);
      },
      [self](atom::dump) -> caf::result<json::value> {
        auto& st = self->state;
        json::object o;
        o["kind"] = "agents";
        o["state"] = st.ready ? "idle" : "starting";
        o["mailbox"] = self->mailbox().size();
        o["resources"] = json::object{{"store", st.paths.root}};
        o["counters"] = json::object{{"requests", st.requests},
                                     {"failures", st.failures},
                                     {"agents", st.agents.size()}};
        o["uptime_ms"] = uptime_ms(st.started);
        std::vector<agent_actor> live;
        json::array stopped;
        for (auto& [aid, slot] : st.agents) {
          if (slot.handle)
            live.push_back(slot.handle);
          else
            stopped.push_back(json::object{{"kind", "agent"},
                                           {"agent_id", aid},
                                           {"state", to_string(slot.status)}});
        }
        return dump_with_children(self, std::move(o), live, std::move(stopped));
      },
  };
}

} // namespace allox
