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
#include "messages/params.hpp"

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <set>

namespace allox {

namespace {

using self_ptr = agents_actor::stateful_pointer<agents_state>;

template <class T>
void append_all(std::vector<T>& into, std::vector<T>&& from) {
  into.insert(into.end(), std::make_move_iterator(from.begin()),
              std::make_move_iterator(from.end()));
}

/// Appends every change of `from` to `into` (applied in that order).
void append(metadata_write& into, metadata_write&& from) {
  append_all(into.put_agents, std::move(from.put_agents));
  append_all(into.delete_agents, std::move(from.delete_agents));
  append_all(into.put_sessions, std::move(from.put_sessions));
  append_all(into.delete_sessions, std::move(from.delete_sessions));
  append_all(into.put_checkpoints, std::move(from.put_checkpoints));
  append_all(into.delete_checkpoints, std::move(from.delete_checkpoints));
  append_all(into.set_heads, std::move(from.set_heads));
  append_all(into.put_journals, std::move(from.put_journals));
  append_all(into.delete_journals, std::move(from.delete_journals));
  append_all(into.audit, std::move(from.audit));
  into.mark_prototype_imported |= from.mark_prototype_imported;
}

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
                  self->address(), self->state.exec,    std::move(fenced)};
  slot.handle =
      self->spawn<caf::linked + caf::monitored>(agent, std::move(init));
  slot.status = "running";
}

caf::error not_found(const std::string& aid) {
  return make_error(errc::not_found, "agent does not exist: " + aid);
}

/// Forwards to an agent actor and watches for a completed agent.delete.
caf::result<json::value> forward(self_ptr self, agent_slot& slot,
                                 const std::string& action,
                                 const json::object& params) {
  if (action != "agent.delete")
    return self->delegate(slot.handle, atom::rpc_v, action,
                          json::value(params));
  auto rp = self->make_response_promise<json::value>();
  auto aid = slot.row.agent_id;
  slot.status = "deleting";
  self->request(slot.handle, caf::infinite, atom::rpc_v, action,
                json::value(params))
      .then(
          [self, rp, aid](json::value& v) mutable {
            self->state.agents.erase(aid);
            rp.deliver(std::move(v));
          },
          [self, rp, aid](caf::error& err) mutable {
            if (auto it = self->state.agents.find(aid);
                it != self->state.agents.end())
              it->second.status = "running";
            rp.deliver(std::move(err));
          });
  return rp;
}

void answer_queued(self_ptr self, const std::string& aid, caf::error err) {
  auto calls = std::move(self->state.creating[aid]);
  self->state.creating.erase(aid);
  for (auto& call : calls) {
    if (err) {
      call.promise.deliver(err);
      continue;
    }
    if (call.action == "agent.create") {
      call.promise.deliver(json::value(describe_agent_workspace(aid)));
      continue;
    }
    auto& slot = self->state.agents[aid];
    self->request(slot.handle, caf::infinite, atom::rpc_v, call.action,
                  json::value(call.params))
        .then([rp = call.promise](json::value& v) mutable { rp.deliver(v); },
              [rp = call.promise](caf::error& e) mutable { rp.deliver(e); });
  }
}

/// Creates a new agent (directories, row, audit) and then spawns its actor.
/// Requests for the agent that arrive meanwhile queue behind the creation.
caf::result<json::value> create_agent(self_ptr self, const std::string& aid,
                                      const std::string& action,
                                      const json::object& params) {
  auto rp = self->make_response_promise<json::value>();
  auto& queue = self->state.creating[aid];
  queue.push_back({action, params, rp});
  if (queue.size() > 1)
    return rp;
  auto paths = self->state.paths;
  auto origin = params::origin(params);
  // session.create writes its own agent.create record (prototype order).
  bool record = action == "agent.create";
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
  return rp;
}

caf::result<json::value> store_initialize(self_ptr self) {
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
                  if (exec) {
                    auto fenced = store::recover_runs(exec->audit_root);
                    if (!fenced)
                      return fenced.error();
                    result->fenced_runs = std::move(*fenced);
                  }
                  // A store written by the prototype, once.
                  metadata_write imported;
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

void on_agent_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  for (auto it = st.agents.begin(); it != st.agents.end(); ++it) {
    auto& slot = it->second;
    if (!slot.handle || slot.handle.address() != dm.source)
      continue;
    if (!dm.reason || dm.reason == caf::exit_reason::user_shutdown ||
        slot.status == "deleting") {
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
      slot.status = "failed";
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
                pos->second.status = "failed";
            });
    return;
  }
}

/// Dispatches one RPC action this actor owns.
caf::result<json::value> handle_rpc(self_ptr self, const std::string& action,
                                    const json::object& params) {
  auto& st = self->state;
  ++st.requests;
  if (action == "store.initialize")
    return store_initialize(self);
  if (action == "agent.list") {
    json::array ids;
    for (const auto& [aid, slot] : st.agents)
      ids.emplace_back(aid);
    return json_reply(json::object{{"agent_ids", std::move(ids)}});
  }
  auto aid = params::required_id(params, "agent_id", "agent");
  if (!aid)
    return aid.error();
  if (st.creating.count(*aid) > 0) {
    auto rp = self->make_response_promise<json::value>();
    st.creating[*aid].push_back({action, params, rp});
    return rp;
  }
  auto it = st.agents.find(*aid);
  if (it == st.agents.end()) {
    // Bad input creates nothing: check the session id before the
    // implicit agent creation.
    if (action == "session.create")
      if (auto sid = params::required_id(params, "session_id", "session"); !sid)
        return sid.error();
    if (action == "agent.create" || action == "session.create")
      return create_agent(self, *aid, action, params);
    return not_found(*aid);
  }
  auto& slot = it->second;
  if (slot.status == "deleting")
    return make_error(errc::conflict, "agent is being deleted: " + *aid);
  if (!slot.handle)
    return make_error(errc::internal, "agent actor is not running: " + *aid);
  return forward(self, slot, action, params);
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
    self->quit(em.reason);
  });
  return {
      [self](atom::load) -> caf::result<json::value> { return load(self); },
      [self](atom::rpc, const std::string& action,
             const json::value& body) -> caf::result<json::value> {
        auto& st = self->state;
        // Left set if the handler throws: the failure log names it.
        st.handling = action;
        auto result = handle_rpc(self, action, body.as_object());
        st.handling.clear();
        return result;
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
            stopped.push_back(json::object{
                {"kind", "agent"}, {"agent_id", aid}, {"state", slot.status}});
        }
        return dump_with_children(self, std::move(o), live, std::move(stopped));
      },
  };
}

} // namespace allox
