#include "actors/session/session.hpp"

#include "actors/dump.hpp"
#include "actors/failures.hpp"
#include "actors/session/facets.hpp"
#include "guest/log.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "messages/ids.hpp"

#include <caf/stateful_actor.hpp>

#include <chrono>
#include <exception>
#include <string>

namespace allox {

std::string session_state::key() const {
  return session_key(agent_id(), session_id());
}

json::object describe_session(const session_row& row,
                              const store::checkpoint_dag& dag) {
  const auto& a = row.agent_id;
  const auto& s = row.session_id;
  json::object o;
  o["agent_id"] = a;
  o["session_id"] = s;
  o["workspace_level"] = "session";
  o["relative_agent_workspace"] = store::layout::rel_agent_workspace(a);
  o["relative_agent_shared"] = store::layout::rel_agent_shared(a);
  o["relative_session_workspace"] = store::layout::rel_session(a, s);
  o["relative_workspace"] = store::layout::rel_current(a, s);
  o["checkpoint_ids"] = dag.present_ids();
  if (dag.head().empty())
    o["checkpoint_head"] = nullptr;
  else
    o["checkpoint_head"] = dag.head();
  return o;
}

namespace session_facets {

// -- shared helpers -----------------------------------------------------------

caf::error conflict(std::string msg) {
  return make_error(errc::conflict, std::move(msg));
}

audit_event audit(self_ptr self, const std::string& op, json::object fields) {
  return {os::now_ns(), op, self->state.agent_id(), self->state.session_id(),
          json::serialize(fields)};
}

session_ref ref(self_ptr self) {
  return {self->state.agent_id(), self->state.session_id()};
}

// -- guards -------------------------------------------------------------------

caf::error require_alive(self_ptr self) {
  auto& st = self->state;
  if (st.phase == "retired" || st.phase == "deleting")
    return make_error(errc::not_found, "session does not exist: " + st.key());
  if (st.phase == "fenced")
    return conflict("session is fenced (" + st.fence_reason +
                    "); restart the daemon to recover: " + st.key());
  return caf::none;
}

/// The prototype's "mutating": a mutation runs or a reset fences.
bool mutating(self_ptr self) {
  return self->state.phase == "mutating" || !self->state.reset_token.empty();
}

/// Guard of checkpoint.create/delete and session.rollback.
caf::error require_mutable(self_ptr self) {
  if (auto err = require_alive(self))
    return err;
  auto& st = self->state;
  if (mutating(self))
    return conflict("session mutation already in progress: " + st.key());
  if (!st.leases.empty())
    return conflict("session has active executions: " + st.key());
  if (!st.background.empty())
    return conflict("session has persistent runtime executions: " + st.key() +
                    "; use runtime reset before rollback");
  return caf::none;
}

void begin_mutation(self_ptr self, std::string what) {
  self->state.phase = "mutating";
  self->state.mutation = std::move(what);
}

void end_mutation(self_ptr self) {
  if (self->state.phase == "mutating")
    self->state.phase = "idle";
  self->state.mutation.clear();
}

/// A mutation ended in `err`: counted, the session freed, the caller told.
void mutation_failed(self_ptr self, promise& rp, caf::error err) {
  ++self->state.failures;
  end_mutation(self);
  rp.deliver(std::move(err));
}

/// A catalog write failed: the store may be mid-operation, so nothing else
/// may touch the session until start-up recovery has run.
void fence(self_ptr self, const caf::error& err) {
  auto& st = self->state;
  st.phase = "fenced";
  st.fence_reason = "metadata write failed: " + message_of(err);
  st.mutation.clear();
  log::error("session", st.key() + " fenced: " + st.fence_reason);
}

// -- session.describe, dump, dispatch -----------------------------------------

caf::result<json::value> handle_describe(self_ptr self) {
  if (self->state.phase == "retired")
    return make_error(errc::not_found,
                      "session does not exist: " + self->state.key());
  const auto& row = self->state.init.row;
  auto current = self->state.init.paths.current(row.agent_id, row.session_id);
  // One lstat: cheap, and catches a workspace replaced behind our back.
  switch (os::kind_of(current)) {
  case os::entry_kind::directory:
    break;
  case os::entry_kind::missing:
    if (self->state.phase == "mutating")
      break; // mid-rollback: current/ is being swapped
    return make_error(errc::not_found,
                      "session does not exist: " + self->state.key());
  default:
    return make_error(errc::invalid_argument,
                      "session workspace is not a managed directory: " +
                          current);
  }
  return json_reply(describe_session(row, self->state.dag));
}

static json::value dump(self_ptr self) {
  const auto& st = self->state;
  json::object o;
  o["kind"] = "session";
  o["agent_id"] = st.agent_id();
  o["session_id"] = st.session_id();
  o["state"] = st.phase;
  if (!st.mutation.empty())
    o["mutation"] = st.mutation;
  if (!st.fence_reason.empty())
    o["fence_reason"] = st.fence_reason;
  o["mailbox"] = self->mailbox().size();
  o["resources"] = json::object{
      {"subvolume", st.init.paths.current(st.agent_id(), st.session_id())},
      {"checkpoints", st.dag.size()}};
  o["leases"] = st.leases.size();
  o["pending_discards"] = st.discards.size();
  o["unsynced_checkpoints"] = st.unsynced_intents.size();
  o["lane"] = static_cast<bool>(*st.lane);
  o["background_executions"] = st.background.size();
  o["reset_fence"] = !st.reset_token.empty();
  o["head"] =
      st.dag.head().empty() ? json::value(nullptr) : json::value(st.dag.head());
  o["counters"] = json::object{{"requests", st.requests},
                               {"failures", st.failures},
                               {"restarts", st.init.restarts},
                               {"checkpoints_created", st.checkpoints_created},
                               {"rollbacks", st.rollbacks}};
  o["uptime_ms"] = uptime_ms(st.started);
  return o;
}

/// Dispatches one session-scoped RPC action to its handler.
static caf::result<json::value>
handle_rpc(self_ptr self, const std::string& action, const json::object& p) {
  if (action == "session.describe")
    return handle_describe(self);
  if (action == "checkpoint.list")
    return handle_checkpoint_list(self, p);
  if (action == "checkpoint.describe")
    return handle_checkpoint_describe(self, p);
  if (action == "checkpoint.create")
    return handle_checkpoint_create(self, p);
  if (action == "checkpoint.delete")
    return handle_checkpoint_delete(self, p);
  if (action == "checkpoint.diff")
    return handle_checkpoint_diff(self, p);
  if (action == "session.rollback")
    return handle_rollback(self, p, false);
  if (action == "session.rollback_after_runtime_reset")
    return handle_rollback(self, p, true);
  if (action == "process.start")
    return handle_process_start(self, p);
  if (action == "session.configure")
    return handle_configure(self, p);
  if (action == "process.get")
    return handle_process_get(self, p);
  if (action == "process.list")
    return handle_process_list(self);
  if (action == "process.stop")
    return handle_process_stop(self, p);
  if (action == "process.output")
    return handle_process_output(self, p);
  if (action == "process.events")
    return handle_process_events(self, p);
  if (action == "execution.acquire")
    return handle_acquire(self);
  if (action == "execution.release")
    return handle_release(self, p);
  if (action == "runtime.register_background")
    return handle_register_background(self, p);
  if (action == "runtime.begin_reset")
    return handle_begin_reset(self, p);
  if (action == "runtime.complete_reset")
    return handle_complete_reset(self, p);
  if (action == "session.unfence")
    return handle_unfence(self, p);
  if (action == "session.delete")
    return handle_delete(self, p);
  if (action == "debug.fault") {
    if (auto err = self->state.faults.arm(p))
      return err;
    return json_reply(json::object{{"armed", true}});
  }
  return make_error(errc::invalid_argument, "unknown action: " + action);
}

} // namespace session_facets

session_actor::behavior_type session(session_facets::self_ptr self,
                                     session_init init) {
  using namespace session_facets;
  self->state.dag =
      store::checkpoint_dag(std::move(init.checkpoints), init.row.head);
  init.checkpoints.clear();
  self->state.runs.config = init.exec;
  for (const auto& id : init.interrupted_runs)
    self->state.leases["run:" + id] = os::now_ns();
  self->state.runs.interrupted = std::move(init.interrupted_runs);
  self->state.init = std::move(init);
  self->state.started = std::chrono::steady_clock::now();
  self->attach_functor([lane = self->state.lane] { retire_lane(*lane); });
  // Whatever ends this actor (shutdown, failure) ends its runs too.
  if (self->state.runs.config) {
    auto group = self->state.runs.config->cgroups.session_group(
        self->state.agent_id(), self->state.session_id());
    self->attach_functor([group] { os::kill_group(group); });
  }
  // An orderly stop (daemon shutdown) ends the active run first, recorded
  // as stopped with reason daemon_shutdown.
  self->set_exit_handler([self](caf::exit_msg& em) {
    shutdown_runs(self);
    self->quit(em.reason);
  });
  self->set_exception_handler([self](std::exception_ptr& ep) {
    return actor_failed(ep, "session " + self->state.key(),
                        self->state.handling);
  });
  return {
      [self](atom::rpc, const std::string& action,
             const json::value& body) -> caf::result<json::value> {
        auto& st = self->state;
        ++st.requests;
        // Left set if the handler throws: the failure log names it.
        st.handling = action;
        // Lets tests fail this actor in the middle of a request.
        st.faults.trigger(action);
        auto result = handle_rpc(self, action, body.as_object());
        st.handling.clear();
        return result;
      },
      [self](atom::retire, bool retire) -> caf::result<caf::ok_atom> {
        auto& st = self->state;
        if (!retire) {
          if (st.phase == "retired")
            st.phase = "idle";
          return caf::ok_atom_v;
        }
        if (auto err = require_mutable(self))
          return err;
        st.phase = "retired";
        return caf::ok_atom_v;
      },
      [self](atom::purge) { idle_work(self); },
      [self](atom::started, const std::string& id, int64_t pid) {
        on_run_started(self, id, pid);
      },
      [self](atom::finished, const std::string& id, int64_t code, bool empty,
             const std::string& error) {
        on_run_finished(self, id, code, empty, error);
      },
      [self](atom::timeout, const std::string& id) {
        kill_run(self, id, "timeout", {});
      },
      [self](atom::dump) -> json::value { return dump(self); },
  };
}

} // namespace allox
