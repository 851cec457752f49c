// SPDX-License-Identifier: Apache-2.0
#include "actors/agent.hpp"
#include "actors/command_list.hpp"

#include "actors/agent_detail.hpp"

#include "actors/blocking.hpp"
#include "actors/dump.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "guest/store/run_output.hpp"
#include "messages/commands/lists.hpp"
#include "messages/ids.hpp"

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <sys/stat.h>

namespace allox {

namespace agent_detail {

using self_ptr = agent_actor::stateful_pointer<agent_state>;

audit_event audit(const std::string& op, const std::string& agent_id,
                  const std::string& session_id, json::object fields) {
  return {os::now_ns(), op, agent_id, session_id, json::serialize(fields)};
}

/// Interrupted runs fence every actor of a session (a restarted one too)
/// until the session lifts the fence with session.unfence.
std::vector<std::string> fenced_runs(self_ptr self, const std::string& sid) {
  auto& map = self->state.init.fenced_runs;
  auto it = map.find(sid);
  return it == map.end() ? std::vector<std::string>{} : it->second;
}

void spawn_session(self_ptr self, session_entry& e,
                   std::vector<checkpoint_row> checkpoints,
                   std::vector<std::string> unsynced) {
  session_init init{e.row,
                    std::move(checkpoints),
                    e.restarts,
                    self->state.init.paths,
                    self->state.init.metadata,
                    self->state.init.exec,
                    fenced_runs(self, e.row.session_id),
                    self->address()};
  init.agent_policy = self->state.init.row.policy;
  init.agents = self->state.init.parent;
  auto& adopted = self->state.init.adopted_runs;
  if (auto a = adopted.find(e.row.session_id); a != adopted.end()) {
    init.adopted_runs = std::move(a->second);
    adopted.erase(a);
  }
  init.unsynced_intents = std::move(unsynced);
  auto& forks = self->state.init.forks->sessions;
  if (auto f = forks.find(e.row.session_id); f != forks.end()) {
    init.baseline_ready = f->second.baseline_ready;
    init.forks_out = drop_ready(f->second.forks_out);
  }
  e.handle =
      self->spawn<caf::linked + caf::monitored>(session, std::move(init));
  e.status = child_status::running;
}

} // namespace agent_detail

namespace {

using namespace agent_detail;

/// Re-spawns a failed session from its persisted row and checkpoints.
void restart_session(self_ptr self, const std::string& sid) {
  auto& e = self->state.sessions[sid];
  e.status = child_status::restarting;
  self->request(self->state.init.metadata, caf::infinite, atom::load_v,
                e.row.agent_id, sid)
      .then(
          [self, sid](catalog_snapshot& snap) {
            auto it = self->state.sessions.find(sid);
            if (it == self->state.sessions.end() || snap.sessions.empty())
              return;
            it->second.row = snap.sessions.front();
            spawn_session(self, it->second, std::move(snap.checkpoints));
          },
          [self, sid](caf::error& err) {
            log::error("agent", "cannot restart session " + sid + ": " +
                                    message_of(err));
            if (auto it = self->state.sessions.find(sid);
                it != self->state.sessions.end())
              it->second.status = child_status::failed;
          });
}

caf::error agent_busy(self_ptr self) {
  if (self->state.phase == agent_phase::deleting)
    return make_error(errc::conflict, "agent is being deleted: " +
                                          self->state.init.row.agent_id);
  return caf::none;
}

// -- session.create -----------------------------------------------------------

// Blocking part: the session directory, `checkpoints/`, the subvolume
// `current/` and `current/.allox-tmp` (0700). A crash after the subvolume
// exists but before the catalog row is written is repaired at start-up,
// which adopts the session (guest/store/reconcile.cpp).
expected<step_done> create_session_files(const store::layout& paths,
                                         const std::string& a,
                                         const std::string& s,
                                         fault_set faults) {
  if (auto err = ensure_agent_dirs(paths, a))
    return err;
  auto current = paths.current(a, s);
  if (os::kind_of(current) != os::entry_kind::missing)
    return make_error(errc::already_exists,
                      "session already exists: " + session_key(a, s));
  if (auto err = os::ensure_managed_dir(paths.session_dir(a, s), 0755,
                                        "session workspace"))
    return err;
  if (auto err = os::ensure_managed_dir(paths.checkpoints_dir(a, s), 0755,
                                        "checkpoint directory"))
    return err;
  faults.trigger("session.create.before_subvolume");
  if (auto err = os::create_subvolume(current))
    return err;
  auto tmp = current + "/.allox-tmp";
  if (::mkdir(tmp.c_str(), 0700) != 0 || ::chmod(tmp.c_str(), 0700) != 0)
    return make_error(errc::internal, "cannot create " + tmp);
  if (auto err = os::fsync_dir(paths.sessions_dir(a)))
    return err;
  faults.trigger("session.create.after_subvolume");
  return step_done{};
}

caf::result<session_view> handle(self_ptr self, const cmd::session_create& c) {
  const auto& sid = c.session.session_id;
  auto& st = self->state;
  const auto& aid = st.init.row.agent_id;
  if (st.sessions.count(sid) > 0)
    return make_error(errc::already_exists,
                      "session already exists: " + session_key(aid, sid));
  auto& entry = st.sessions[sid];
  entry.status = child_status::creating;
  entry.row = {aid, sid, os::now_ns(), false, {}, {}};
  auto rp = self->make_response_promise<session_view>();
  auto paths = st.init.paths;
  auto faults = st.faults.take("session.create");
  auto fail = [self, rp, sid](caf::error& err) mutable {
    ++self->state.failures;
    self->state.sessions.erase(sid);
    rp.deliver(std::move(err));
  };
  run_blocking<step_done>(self,
                          [paths, aid, sid, faults]() mutable {
                            return create_session_files(paths, aid, sid,
                                                        faults);
                          })
      .then(
          [self, rp, sid, origin = c.origin, fail](step_done&) mutable {
            const auto& init = self->state.init;
            metadata_write w;
            w.put_agents.push_back(init.row);
            w.put_sessions.push_back(self->state.sessions[sid].row);
            w.audit.push_back(audit("agent.create", init.row.agent_id, {},
                                    {{"origin", origin}}));
            w.audit.push_back(audit("session.create", init.row.agent_id, sid,
                                    {{"origin", origin}}));
            self->request(init.metadata, caf::infinite, atom::write_v,
                          std::move(w))
                .then(
                    [self, rp, sid](caf::ok_atom) mutable {
                      auto& e = self->state.sessions[sid];
                      spawn_session(self, e, {});
                      rp.deliver(view_of(e.row, store::checkpoint_dag{}));
                    },
                    fail);
          },
          fail);
  return rp;
}

// -- session.delete -----------------------------------------------------------

caf::result<session_deleted> handle(self_ptr self,
                                    const cmd::session_delete_request& c) {
  const auto& sid = c.session.session_id;
  auto& st = self->state;
  auto it = st.sessions.find(sid);
  if (it == st.sessions.end() || it->second.status != child_status::running)
    return make_error(errc::not_found,
                      "session does not exist: " +
                          session_key(st.init.row.agent_id, sid));
  auto rp = self->make_response_promise<session_deleted>();
  cmd::session_delete command{{st.init.row.agent_id, sid}, c.origin};
  self->request(it->second.handle, caf::infinite, std::move(command))
      .then(
          [self, rp, sid](session_deleted& result) mutable {
            self->state.sessions.erase(sid);
            self->state.init.forks->sessions.erase(sid);
            rp.deliver(std::move(result));
          },
          [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

// -- agent.delete -------------------------------------------------------------

/// Undoes the retirement of every session after a refused or failed delete.
void resume_sessions(self_ptr self) {
  self->state.phase = agent_phase::idle;
  for (auto& entry : self->state.sessions)
    if (entry.second.handle)
      caf::anon_send(entry.second.handle, atom::retire_v, false);
}

/// The durable part of agent.delete, once every session is retired: mark the
/// row, move the directory into the trash, remove the rows, purge.
void delete_agent_files(self_ptr self,
                        caf::typed_response_promise<agent_deleted> rp,
                        std::string origin) {
  const auto& init = self->state.init;
  auto aid = init.row.agent_id;
  auto paths = init.paths;
  metadata_write mark;
  auto row = init.row;
  row.deleting = true;
  mark.put_agents.push_back(row);
  auto fail = [self, rp](caf::error& err) mutable {
    resume_sessions(self);
    rp.deliver(std::move(err));
  };
  auto done = [self, rp, aid]() mutable {
    rp.deliver(agent_deleted{aid});
    self->quit(caf::exit_reason::user_shutdown);
  };
  self->request(init.metadata, caf::infinite, atom::write_v, std::move(mark))
      .then(
          [self, origin, aid, paths, fail, done](caf::ok_atom) mutable {
            auto trash = paths.agents_dir() + "/" +
                         std::string{store::trash_prefix} + random_hex_token();
            run_blocking<step_done>(
                self,
                [paths, aid, trash]() -> expected<step_done> {
                  if (auto err = os::rename_path(paths.agent_dir(aid), trash))
                    return err;
                  if (auto err = os::fsync_dir(paths.agents_dir()))
                    return err;
                  return step_done{};
                })
                .then(
                    [self, origin, aid, trash, fail, done](step_done&) mutable {
                      metadata_write w;
                      w.delete_agents.push_back(aid);
                      w.audit.push_back(
                          audit("agent.delete", aid, {}, {{"origin", origin}}));
                      self->request(self->state.init.metadata, caf::infinite,
                                    atom::write_v, std::move(w))
                          .then(
                              [self, aid, trash, done](caf::ok_atom) mutable {
                                // Committed: a crash from here on only leaves
                                // trash, which start-up purges.
                                auto exec = self->state.init.exec;
                                run_blocking<step_done>(
                                    self,
                                    [aid, trash,
                                     exec]() -> expected<step_done> {
                                      if (auto err = os::remove_tree(trash))
                                        log::warn("agent", "purging " + trash +
                                                               " failed: " +
                                                               message_of(err));
                                      if (exec) {
                                        os::remove_agent_groups(exec->cgroups,
                                                                aid);
                                        // Its runs' logs.
                                        auto logs = store::agent_output_dir(
                                            exec->audit_root, aid);
                                        if (auto err = os::remove_tree(logs))
                                          log::warn("agent",
                                                    "purging " + logs +
                                                        " failed: " +
                                                        message_of(err));
                                      }
                                      return step_done{};
                                    })
                                    .then(
                                        [done](step_done&) mutable { done(); },
                                        [done](caf::error&) mutable {
                                          done();
                                        });
                              },
                              fail);
                    },
                    fail);
          },
          fail);
}

// Every session is retired first (refused if one is busy), then the agent
// directory goes the way of delete_agent_files.
caf::result<agent_deleted> handle(self_ptr self, const cmd::agent_delete& c) {
  auto rp = self->make_response_promise<agent_deleted>();
  const auto& origin = c.origin;
  std::vector<session_actor> live;
  for (auto& entry : self->state.sessions)
    if (entry.second.handle)
      live.push_back(entry.second.handle);
  self->state.phase = agent_phase::deleting;
  if (live.empty()) {
    delete_agent_files(self, rp, origin);
    return rp;
  }
  struct retirement {
    size_t remaining;
    caf::error refused;
  };
  auto r = std::make_shared<retirement>(retirement{live.size(), {}});
  auto settle = [self, rp, origin, r]() mutable {
    if (--r->remaining > 0)
      return;
    if (r->refused) {
      resume_sessions(self);
      rp.deliver(r->refused);
      return;
    }
    delete_agent_files(self, rp, origin);
  };
  for (auto& handle : live)
    self->request(handle, caf::infinite, atom::retire_v, true)
        .then([settle](caf::ok_atom) mutable { settle(); },
              [r, settle](caf::error& err) mutable {
                if (!r->refused)
                  r->refused = err;
                settle();
              });
  return rp;
}

// -- agent.create (existing agent) -------------------------------------------

caf::result<agent_view> handle(self_ptr self, const cmd::agent_create& c) {
  auto rp = self->make_response_promise<agent_view>();
  const auto& origin = c.origin;
  auto paths = self->state.init.paths;
  auto aid = self->state.init.row.agent_id;
  auto fail = [self, rp](caf::error& err) mutable {
    ++self->state.failures;
    rp.deliver(std::move(err));
  };
  run_blocking<step_done>(self,
                          [paths, aid]() -> expected<step_done> {
                            if (auto err = ensure_agent_dirs(paths, aid))
                              return err;
                            return step_done{};
                          })
      .then(
          [self, rp, origin, aid, fail](step_done&) mutable {
            metadata_write w;
            w.audit.push_back(
                audit("agent.create", aid, {}, {{"origin", origin}}));
            self->request(self->state.init.metadata, caf::infinite,
                          atom::write_v, std::move(w))
                .then(
                    [rp, aid](caf::ok_atom) mutable {
                      rp.deliver(describe_agent_workspace(aid));
                    },
                    fail);
          },
          fail);
  return rp;
}

std::vector<std::string> live_session_ids(self_ptr self) {
  std::vector<std::string> ids;
  for (const auto& [sid, e] : self->state.sessions)
    if (e.status != child_status::creating)
      ids.push_back(sid);
  return ids;
}

// -- agent.describe, session.list, debug.fault --------------------------------

caf::result<agent_view> handle(self_ptr self, const cmd::agent_describe&) {
  auto v = describe_agent_workspace(self->state.init.row.agent_id);
  v.created_ns = self->state.init.row.created_ns;
  v.session_ids = live_session_ids(self);
  return v;
}

caf::result<session_ids> handle(self_ptr self, const cmd::session_list&) {
  return session_ids{self->state.init.row.agent_id, live_session_ids(self)};
}

caf::result<fault_armed> handle(self_ptr self,
                                const cmd::agent_debug_fault& c) {
  self->state.faults.arm(fault{c.point, c.effect, c.millis});
  return fault_armed{};
}

// -- supervision --------------------------------------------------------------

/// A session actor failed (supervision::on_child_down decided): it is
/// re-spawned from its rows or, past its budget, left failed; either way
/// audited.
void on_session_failed(
    self_ptr self,
    supervision::child_down<decltype(agent_state::sessions)>& down,
    const caf::error& why) {
  auto& [sid, e] = *down.child;
  auto reason = message_of(why);
  json::object fields{{"reason", reason}};
  if (down.decision == supervision::down_decision::give_up) {
    fields["restarted"] = false;
    log::error("agent", "session " + session_key(e.row.agent_id, sid) +
                            " failed too often; not restarting");
  } else {
    restart_session(self, sid);
    fields["restarted"] = true;
    log::warn("agent", "session " + session_key(e.row.agent_id, sid) +
                           " failed (" + reason + "); restarted");
  }
  metadata_write w;
  w.audit.push_back(
      audit("session.actor_failed", e.row.agent_id, sid, std::move(fields)));
  caf::anon_send(self->state.init.metadata, atom::write_v, std::move(w));
}

/// Serves one command (supervision::serve), refused while the agent is
/// being deleted.
template <class Command, class Handler>
auto serve(self_ptr self, const Command& c, Handler handler) {
  return supervision::serve(self, c, handler, agent_busy);
}

} // namespace

namespace {

/// With the store's quotas on, the agent's shared area (a subvolume of its
/// own, ensure_agent_dirs) is held to the daemon's default share: it counts
/// in no session's, and a run writing there would otherwise fill the
/// store. Checked at every start, as the default may change across
/// restarts.
void limit_shared_area(self_ptr self) {
  const auto& init = self->state.init;
  if (!init.exec || !init.exec->store_quotas)
    return;
  auto share = disk_share_of(*init.exec, init.exec->default_limits);
  auto shared = init.paths.agent_shared(init.row.agent_id);
  if (os::subvolume_limited(shared, share))
    return;
  auto aid = init.row.agent_id;
  run_blocking<step_done>(self,
                          [shared, share]() -> expected<step_done> {
                            if (auto err = os::limit_subvolume(shared, share))
                              return err;
                            return step_done{};
                          })
      .then([](step_done&) {},
            [aid](caf::error& err) {
              log::warn("agent", aid + ": the shared area is not limited: " +
                                     message_of(err));
            });
}

} // namespace

agent_actor::behavior_type agent(self_ptr self, agent_init init) {
  self->state.init = std::move(init);
  self->state.started = std::chrono::steady_clock::now();
  std::map<std::string, std::vector<checkpoint_row>> by_session;
  for (auto& c : self->state.init.checkpoints)
    by_session[c.session_id].push_back(std::move(c));
  for (auto& row : self->state.init.sessions) {
    auto& entry = self->state.sessions[row.session_id];
    entry.row = row;
    spawn_session(self, entry, std::move(by_session[row.session_id]));
  }
  self->state.init.sessions.clear();
  self->state.init.checkpoints.clear();
  // Only the parent's exit stops the agent, and its sessions with it; a
  // session that ends goes through on_session_failed if it failed.
  supervision::supervise(self, self->state.init.parent, &agent_state::sessions,
                         "agent " + self->state.init.row.agent_id,
                         on_session_failed);
  limit_shared_area(self);
  // Every command of the agent's list goes to its handler through serve
  // (refused while agent.delete runs); the rest are a session's news and
  // lookups.
  return behavior_of<agent_actor::behavior_type>(
      cmd::agent_commands{},
      [self](const auto& c) {
        return serve(self, c,
                     [](self_ptr s, const auto& x) { return handle(s, x); });
      },
      [self](const fence_lifted& e) {
        self->state.init.fenced_runs.erase(e.session_id);
      },
      [self](atom::session,
             const std::string& sid) -> caf::result<session_actor> {
        auto& st = self->state;
        auto it = st.sessions.find(sid);
        auto key = session_key(st.init.row.agent_id, sid);
        if (it == st.sessions.end() ||
            it->second.status == child_status::creating)
          return make_error(errc::not_found, "session does not exist: " + key);
        if (it->second.status == child_status::restarting)
          return make_error(errc::conflict, "session is restarting: " + key);
        if (it->second.status == child_status::failed || !it->second.handle)
          return make_error(errc::internal,
                            "session actor failed repeatedly and is stopped: " +
                                key);
        return it->second.handle;
      },
      [self](atom::stats) -> caf::result<actor_stats> {
        auto& st = self->state;
        actor_stats s;
        s.kind = "agent";
        s.agent_id = st.init.row.agent_id;
        s.top()
            .fact("state", st.phase == agent_phase::idle ? "idle" : "deleting")
            .gauge("mailbox", self->mailbox().size());
        s.group("resources")
            .fact("workspace",
                  st.init.paths.agent_workspace(st.init.row.agent_id));
        s.group("counters")
            .counter("requests", st.requests)
            .counter("failures", st.failures)
            .counter("restarts", st.init.restarts);
        s.top().gauge("uptime_ms", uptime_ms(st.started));
        std::vector<session_actor> live;
        std::vector<actor_stats> stopped;
        for (auto& [sid, e] : st.sessions) {
          if (e.handle) {
            live.push_back(e.handle);
            continue;
          }
          // Sessions without an actor still show, with why.
          auto& c = stopped.emplace_back();
          c.kind = "session";
          c.agent_id = e.row.agent_id;
          c.session_id = sid;
          c.top().fact("state", to_string(e.status));
          c.group("counters").counter("restarts", e.restarts);
        }
        return stats_with_children(self, std::move(s), live,
                                   std::move(stopped));
      });
}

} // namespace allox
