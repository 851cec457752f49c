#include "actors/session.hpp"

#include "actors/blocking.hpp"
#include "actors/dump.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "messages/ids.hpp"
#include "messages/params.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

namespace allox {

json::object describe_session(const session_init& init) {
  const auto& a = init.agent_id;
  const auto& s = init.session_id;
  json::object o;
  o["agent_id"] = a;
  o["session_id"] = s;
  o["workspace_level"] = "session";
  o["relative_agent_workspace"] = store::layout::rel_agent_workspace(a);
  o["relative_agent_shared"] = store::layout::rel_agent_shared(a);
  o["relative_session_workspace"] = store::layout::rel_session(a, s);
  o["relative_workspace"] = store::layout::rel_current(a, s);
  o["checkpoint_ids"] = json::array{};
  o["checkpoint_head"] = nullptr;
  return o;
}

namespace {

using self_ptr = session_actor::stateful_pointer<session_state>;

std::string key(const session_init& init) {
  return session_key(init.agent_id, init.session_id);
}

/// Refuses work unless the session is idle.
caf::error require_idle(self_ptr self) {
  const auto& phase = self->state.phase;
  if (phase == "idle")
    return caf::none;
  if (phase == "retired")
    return make_error(errc::not_found,
                      "session does not exist: " + key(self->state.init));
  return make_error(errc::conflict, "session is busy (" + phase
                                      + "): " + key(self->state.init));
}

caf::result<json::value> handle_describe(self_ptr self) {
  if (self->state.phase == "retired")
    return make_error(errc::not_found,
                      "session does not exist: " + key(self->state.init));
  const auto& init = self->state.init;
  auto current = init.paths.current(init.agent_id, init.session_id);
  // One lstat: cheap, and catches a workspace replaced behind our back.
  switch (os::kind_of(current)) {
    case os::entry_kind::directory:
      break;
    case os::entry_kind::missing:
      return make_error(errc::not_found,
                        "session does not exist: " + key(init));
    default:
      return make_error(errc::invalid_argument,
                        "session workspace is not a managed directory: "
                          + current);
  }
  return json_reply(describe_session(init));
}

// Deletion is crash-safe in three durable steps: the row is marked
// `deleting`, the session directory is renamed into a trash name (atomic),
// the row is removed with the audit record. Whatever a crash interrupts,
// start-up reconciliation finishes (actors/agents.cpp).
caf::result<json::value> handle_delete(self_ptr self,
                                       const json::object& params) {
  if (auto err = require_idle(self))
    return err;
  auto origin = params::origin(params);
  auto rp = self->make_response_promise<json::value>();
  auto& st = self->state;
  st.phase = "deleting";
  const auto init = st.init;
  auto fail = [self, rp](caf::error err) mutable {
    self->state.phase = "idle";
    ++self->state.failures;
    rp.deliver(std::move(err));
  };
  metadata_write mark;
  mark.put_sessions.push_back(
    {init.agent_id, init.session_id, init.created_ns, true});
  self->request(init.metadata, caf::infinite, atom::write_v, std::move(mark))
    .then(
      [self, rp, init, origin, fail](caf::ok_atom) mutable {
        auto faults = self->state.faults.take("session.delete");
        auto trash = init.paths.sessions_dir(init.agent_id) + "/"
                     + std::string{store::trash_prefix} + random_hex_token();
        run_blocking(self, [init, trash, faults]() mutable
                     -> expected<json::value> {
          faults.trigger("session.delete.before_rename");
          auto dir = init.paths.session_dir(init.agent_id, init.session_id);
          if (auto err = os::rename_path(dir, trash))
            return err;
          if (auto err = os::fsync_dir(init.paths.sessions_dir(init.agent_id)))
            return err;
          faults.trigger("session.delete.after_rename");
          return json::value(trash);
        })
          .then(
            [self, rp, init, origin, trash, fail](json::value&) mutable {
              metadata_write done;
              done.delete_sessions.push_back({init.agent_id, init.session_id});
              json::object fields{{"origin", origin}};
              done.audit.push_back({os::now_ns(), "session.delete",
                                    init.agent_id, init.session_id,
                                    json::serialize(fields)});
              self
                ->request(init.metadata, caf::infinite, atom::write_v,
                          std::move(done))
                .then(
                  [self, rp, init, trash](caf::ok_atom) mutable {
                    self->state.phase = "retired";
                    // Space is reclaimed after the reply; a crash here
                    // leaves only a trash directory for start-up to purge.
                    run_blocking(self, [trash]() -> expected<json::value> {
                      if (auto err = os::remove_tree(trash))
                        return err;
                      return json::value();
                    })
                      .then(
                        [self, rp, init](json::value&) mutable {
                          json::object r{{"agent_id", init.agent_id},
                                         {"session_id", init.session_id},
                                         {"deleted", true}};
                          rp.deliver(json::value(std::move(r)));
                          self->quit();
                        },
                        [self, rp, init](caf::error& err) mutable {
                          log::warn("session", "purging deleted session "
                                                 + key(init) + " failed: "
                                                 + message_of(err));
                          json::object r{{"agent_id", init.agent_id},
                                         {"session_id", init.session_id},
                                         {"deleted", true}};
                          rp.deliver(json::value(std::move(r)));
                          self->quit();
                        });
                  },
                  [fail](caf::error& err) mutable { fail(std::move(err)); });
            },
            [self, init, fail](caf::error& err) mutable {
              // Nothing moved: clear the mark so a restart does not finish
              // a deletion the caller saw fail.
              metadata_write undo;
              undo.put_sessions.push_back(
                {init.agent_id, init.session_id, init.created_ns, false});
              caf::anon_send(init.metadata, atom::write_v, std::move(undo));
              fail(std::move(err));
            });
      },
      [fail](caf::error& err) mutable { fail(std::move(err)); });
  return rp;
}

json::value dump(self_ptr self) {
  const auto& st = self->state;
  const auto& init = st.init;
  json::object o;
  o["kind"] = "session";
  o["agent_id"] = init.agent_id;
  o["session_id"] = init.session_id;
  o["state"] = st.phase;
  o["mailbox"] = self->mailbox().size();
  json::object resources;
  resources["subvolume"] = init.paths.current(init.agent_id, init.session_id);
  o["resources"] = std::move(resources);
  json::object counters;
  counters["requests"] = st.requests;
  counters["failures"] = st.failures;
  counters["restarts"] = init.restarts;
  o["counters"] = std::move(counters);
  o["uptime_ms"] = uptime_ms(st.started);
  return o;
}

} // namespace

session_actor::behavior_type session(self_ptr self, session_init init) {
  self->state.init = std::move(init);
  self->state.started = std::chrono::steady_clock::now();
  self->set_exception_handler([self](std::exception_ptr& ep) -> caf::error {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    log::error("session", key(self->state.init) + " failed: " + what);
    return make_error(errc::internal, what);
  });
  return {
    [self](atom::rpc, const std::string& action,
           const json::value& body) -> caf::result<json::value> {
      const auto& params = body.as_object();
      ++self->state.requests;
      // Lets tests crash this actor in the middle of a request.
      self->state.faults.trigger(action);
      if (action == "session.describe")
        return handle_describe(self);
      if (action == "session.delete")
        return handle_delete(self, params);
      if (action == "debug.fault") {
        auto f = parse_fault(params);
        if (!f)
          return f.error();
        self->state.faults.arm(std::move(*f));
        return json_reply(json::object{{"armed", true}});
      }
      return make_error(errc::invalid_argument, "unknown action: " + action);
    },
    [self](atom::retire, bool retire) -> caf::result<caf::ok_atom> {
      if (!retire) {
        if (self->state.phase == "retired")
          self->state.phase = "idle";
        return caf::ok_atom_v;
      }
      if (auto err = require_idle(self))
        return err;
      self->state.phase = "retired";
      return caf::ok_atom_v;
    },
    [self](atom::dump) -> json::value { return dump(self); },
  };
}

} // namespace allox
