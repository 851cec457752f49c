// SPDX-License-Identifier: Apache-2.0
// The runtime facet of the SESSION actor: execution leases
// (execution.acquire/release), background executions of outside launchers
// (runtime.register_background), the runtime reset fence
// (runtime.begin_reset/complete_reset) and session.unfence.
#include "actors/session/handlers.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "guest/store/run_recovery.hpp"
#include "messages/ids.hpp"
#include "messages/results/runtime_json.hpp"

#include <string>
#include <vector>

namespace allox::session_facets {

// -- leases, background executions, runtime reset -----------------------------

caf::result<lease_granted> handle(self_ptr self,
                                  const cmd::execution_acquire&) {
  if (auto err = require_alive(self))
    return err;
  auto& st = self->state;
  if (mutating(self))
    return conflict("session is being checkpointed or restored: " + st.key());
  if (!st.leases.empty())
    return conflict("session already has an active execution: " + st.key());
  auto token = random_hex_token();
  st.leases.emplace(token, os::now_ns());
  return lease_granted{token};
}

caf::result<lease_released> handle(self_ptr self,
                                   const cmd::execution_release& c) {
  return lease_released{self->state.leases.erase(c.lease_token) > 0};
}

caf::result<background_registered>
handle(self_ptr self, const cmd::runtime_register_background& c) {
  if (auto err = require_alive(self))
    return err;
  if (mutating(self))
    return conflict("session is being restored: " + self->state.key());
  self->state.background[c.execution_id] = c.sandbox_id;
  return background_registered{c.execution_id};
}

/// Fences the session for a runtime reset; answers through `rp`.
static void begin_reset(self_ptr self,
                        caf::typed_response_promise<reset_begun> rp,
                        caf::optional<std::vector<std::string>> terminated) {
  if (auto err = require_alive(self)) {
    rp.deliver(err);
    return;
  }
  auto& st = self->state;
  if (mutating(self)) {
    rp.deliver(conflict("session mutation already in progress: " + st.key()));
    return;
  }
  if (!st.leases.empty()) {
    rp.deliver(conflict("session has active executions: " + st.key()));
    return;
  }
  st.reset_token = random_hex_token();
  reset_begun r;
  r.reset_token = st.reset_token;
  for (const auto& [execution, sandbox] : st.background)
    r.executions.push_back({sandbox, execution});
  if (terminated) {
    r.terminated = true;
    r.terminated_process_runs = std::move(*terminated);
  }
  rp.deliver(std::move(r));
}

caf::result<reset_begun> handle(self_ptr self,
                                const cmd::runtime_begin_reset& c) {
  auto& st = self->state;
  bool kill_default = st.runs.config && st.runs.config->kill_on_rollback;
  bool kill = c.kill_processes ? *c.kill_processes : kill_default;
  if (kill && !st.runs.config)
    return make_error(errc::unsupported,
                      "kill_processes requires process tracking");
  auto rp = self->make_response_promise<reset_begun>();
  if (!kill) {
    begin_reset(self, rp, caf::none);
  } else {
    kill_runs(self, "rollback", [self, rp](json::array killed) mutable {
      std::vector<std::string> ids;
      for (const auto& id : killed)
        if (id.is_string())
          ids.emplace_back(id.get_string());
      begin_reset(self, rp, std::move(ids));
    });
  }
  return rp;
}

caf::result<reset_completed> handle(self_ptr self,
                                    const cmd::runtime_complete_reset& c) {
  auto& st = self->state;
  if (st.reset_token.empty() || st.reset_token != c.reset_token)
    return make_error(errc::not_found, "unknown runtime reset token");
  if (st.phase == session_phase::mutating)
    return conflict("session mutation already in progress: " + st.key());
  st.reset_token.clear();
  if (c.success)
    st.background.clear();
  return reset_completed{c.success};
}

// An administrator's way out of a fence the prototype could only leave by
// restarting: forgets the runtime reset, every lease and every background
// registration, with an audit record of what was cleared.
caf::result<unfence_result> handle(self_ptr self,
                                   const cmd::session_unfence& c) {
  auto& st = self->state;
  if (st.phase == session_phase::mutating)
    return conflict("session mutation in progress: " + st.key());
  if (auto err = require_alive(self))
    return err;
  if (!st.runs.active.empty())
    return conflict("session still has live processes: " + st.key());
  const auto& origin = c.origin;
  unfence_result cleared{
      st.agent_id(),
      st.session_id(),
      !st.reset_token.empty(),
      st.leases.size(),
      st.background.size(),
      {st.runs.interrupted.begin(), st.runs.interrupted.end()}};
  auto rp = self->make_response_promise<unfence_result>();
  auto finish = [self, rp, cleared, origin]() mutable {
    metadata_write w;
    w.release_runs = self->state.runs.interrupted;
    w.audit.push_back(
        audit(self, "session.unfence",
              {{"origin", origin}, {"cleared", cleared_json(cleared)}}));
    commit(
        self, std::move(w),
        [self, rp, cleared]() mutable {
          auto& state = self->state;
          state.reset_token.clear();
          state.leases.clear();
          state.background.clear();
          if (!state.runs.interrupted.empty())
            if (auto agent = caf::actor_cast<agent_actor>(state.init.agent))
              self->send(agent, fence_lifted{state.session_id()});
          state.runs.interrupted.clear();
          rp.deliver(cleared);
        },
        [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  };
  if (st.runs.interrupted.empty() || !st.runs.config) {
    finish();
    return rp;
  }
  // Runs interrupted by a restart: make sure nothing of them is left in
  // the session cgroup (kill it otherwise) before lifting the fence.
  auto cfg = st.runs.config;
  auto group = cfg->cgroups.session_group(st.agent_id(), st.session_id());
  blocking<step_done>(
      self,
      [group]() -> expected<step_done> {
        if (os::populated(group)) {
          os::kill_group(group);
          if (!os::wait_empty(group, 10000))
            return make_error(errc::conflict,
                              "Session cgroup termination is incomplete; "
                              "session remains fenced");
        }
        os::remove_group(group);
        return step_done{};
      },
      [finish](step_done&) mutable { finish(); },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

} // namespace allox::session_facets
