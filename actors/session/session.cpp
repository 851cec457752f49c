// SPDX-License-Identifier: Apache-2.0
#include "actors/session/session.hpp"

#include "actors/command_list.hpp"
#include "actors/dump.hpp"
#include "actors/failures.hpp"
#include "actors/session/handlers.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "messages/commands/lists.hpp"
#include "messages/ids.hpp"
#include "messages/results/network_json.hpp"

#include <caf/stateful_actor.hpp>

#include <chrono>
#include <exception>
#include <string>

namespace allox {

std::string_view to_string(session_phase p) {
  switch (p) {
  case session_phase::idle:
    return "idle";
  case session_phase::mutating:
    return "mutating";
  case session_phase::deleting:
    return "deleting";
  case session_phase::retired:
    return "retired";
  case session_phase::fenced:
    return "fenced";
  }
  return "unknown";
}

std::string session_state::key() const {
  return session_key(agent_id(), session_id());
}

session_view view_of(const session_row& row, const store::checkpoint_dag& dag) {
  const auto& a = row.agent_id;
  const auto& s = row.session_id;
  session_view v;
  v.agent_id = a;
  v.session_id = s;
  v.relative_agent_workspace = store::layout::rel_agent_workspace(a);
  v.relative_agent_shared = store::layout::rel_agent_shared(a);
  v.relative_session_workspace = store::layout::rel_session(a, s);
  v.relative_workspace = store::layout::rel_current(a, s);
  v.checkpoint_ids = dag.present_ids();
  v.checkpoint_head = dag.head();
  return v;
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
  if (st.phase == session_phase::retired || st.phase == session_phase::deleting)
    return make_error(errc::not_found, "session does not exist: " + st.key());
  if (st.phase == session_phase::fenced)
    return conflict("session is fenced (" + st.fence_reason +
                    "); restart the daemon to recover: " + st.key());
  return caf::none;
}

/// The prototype's "mutating": a mutation runs or a reset fences.
bool mutating(self_ptr self) {
  return self->state.phase == session_phase::mutating ||
         !self->state.reset_token.empty();
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

/// Guard of checkpoint.create/delete: as require_mutable, except that
/// the session's own live runs do not stand in the way (a checkpoint of a
/// live session freezes them for the snapshot); an external lease or a
/// background registration still does, as in the prototype.
caf::error require_checkpointable(self_ptr self) {
  auto& st = self->state;
  if (st.leases.size() == st.runs.active.size() && !st.runs.active.empty()) {
    if (auto err = require_alive(self))
      return err;
    if (mutating(self))
      return conflict("session mutation already in progress: " + st.key());
    if (!st.background.empty())
      return conflict("session has persistent runtime executions: " + st.key() +
                      "; use runtime reset before rollback");
    return caf::none;
  }
  return require_mutable(self);
}

void begin_mutation(self_ptr self, std::string what) {
  self->state.phase = session_phase::mutating;
  self->state.mutation = std::move(what);
}

void end_mutation(self_ptr self) {
  if (self->state.phase == session_phase::mutating)
    self->state.phase = session_phase::idle;
  self->state.mutation.clear();
}

/// A catalog write failed: the store may be mid-operation, so nothing else
/// may touch the session until start-up recovery has run.
void fence(self_ptr self, const caf::error& err, std::string_view what) {
  auto& st = self->state;
  st.phase = session_phase::fenced;
  st.fence_reason = std::string{what} + ": " + message_of(err);
  st.mutation.clear();
  log::error("session", st.key() + " fenced: " + st.fence_reason);
}

// -- session.describe, dump, dispatch -----------------------------------------

/// What the session's cgroup has counted, and its workspace's qgroup;
/// none on a daemon that runs no commands. Six reads of cgroupfs (memory,
/// no disk: about 20 us) and, with the store's quotas on, two ioctls and
/// a few reads of sysfs, at most once a second (describe's own cost is
/// about 250 us).
static caf::optional<session_counters> counters_of(self_ptr self) {
  auto& st = self->state;
  if (!st.runs.config)
    return caf::none;
  auto now = std::chrono::steady_clock::now();
  if (!st.runs.usage_cache ||
      now - st.runs.usage_cached_at >= std::chrono::seconds{1}) {
    st.runs.usage_cache = os::read_counters(
        st.runs.config->cgroups.session_group(st.agent_id(), st.session_id()));
    st.runs.usage_cached_at = now;
    st.runs.disk_bytes_cache.reset();
    if (st.runs.config->store_quotas)
      if (auto q = os::read_share(
              st.init.paths.current(st.agent_id(), st.session_id())))
        st.runs.disk_bytes_cache = static_cast<int64_t>(q->referenced);
  }
  auto g = os::with_retired(*st.runs.usage_cache, st.runs.retired_usage);
  auto opt = [](const std::optional<int64_t>& v) -> caf::optional<int64_t> {
    if (v)
      return *v;
    return caf::none;
  };
  session_counters c;
  c.cpu_usage_usec = g.cpu_usage_usec;
  c.memory_bytes = opt(g.memory_bytes);
  c.memory_peak_bytes = opt(g.memory_peak_bytes);
  c.pids_current = opt(g.pids_current);
  c.oom_kills = opt(g.oom_kills);
  c.pids_refused = opt(g.pids_refused);
  c.disk_bytes = opt(st.runs.disk_bytes_cache);
  return c;
}

caf::result<session_view> handle(self_ptr self, const cmd::session_describe&) {
  if (self->state.phase == session_phase::retired)
    return make_error(errc::not_found,
                      "session does not exist: " + self->state.key());
  const auto& row = self->state.init.row;
  auto current = self->state.init.paths.current(row.agent_id, row.session_id);
  // One lstat: cheap, and catches a workspace replaced behind our back.
  switch (os::kind_of(current)) {
  case os::entry_kind::directory:
    break;
  case os::entry_kind::missing:
    if (self->state.phase == session_phase::mutating)
      break; // mid-rollback: current/ is being swapped
    return make_error(errc::not_found,
                      "session does not exist: " + self->state.key());
  default:
    return make_error(errc::invalid_argument,
                      "session workspace is not a managed directory: " +
                          current);
  }
  auto v = view_of(row, self->state.dag);
  if (self->state.runs.config)
    v.limits = effective_settings(self).limits;
  v.usage = counters_of(self);
  return v;
}

static actor_stats stats_of(self_ptr self) {
  const auto& st = self->state;
  actor_stats s;
  s.kind = "session";
  s.agent_id = st.agent_id();
  s.session_id = st.session_id();
  auto top = s.top();
  top.fact("state", to_string(st.phase));
  if (!st.mutation.empty())
    top.fact("mutation", st.mutation);
  if (!st.fence_reason.empty())
    top.fact("fence_reason", st.fence_reason);
  top.gauge("mailbox", self->mailbox().size());
  s.group("resources")
      .fact("subvolume", st.init.paths.current(st.agent_id(), st.session_id()))
      .gauge("checkpoints", st.dag.size());
  top.gauge("leases", st.leases.size())
      .gauge("runs", st.runs.active.size())
      .gauge("pending_discards", st.discards.size())
      .gauge("unsynced_checkpoints", st.unsynced_intents.size())
      .fact("lane", static_cast<bool>(*st.lane))
      .gauge("background_executions", st.background.size())
      .fact("reset_fence", !st.reset_token.empty());
  if (st.dag.head())
    top.fact("head", *st.dag.head());
  else
    top.fact("head", nullptr);
  s.group("counters")
      .counter("requests", st.requests)
      .counter("failures", st.failures)
      .counter("restarts", st.init.restarts)
      .counter("checkpoints_created", st.checkpoints_created)
      .counter("live_checkpoints", st.live_checkpoints)
      .counter("rollbacks", st.rollbacks);
  if (auto c = counters_of(self)) {
    // Exported by /metrics as allox_session_* (bounded: seven series per
    // live session).
    auto usage = s.group("usage");
    usage.counter("cpu_usage_usec", c->cpu_usage_usec);
    if (c->memory_bytes)
      usage.gauge("memory_bytes", *c->memory_bytes);
    if (c->memory_peak_bytes)
      usage.gauge("memory_peak_bytes", *c->memory_peak_bytes);
    if (c->pids_current)
      usage.gauge("pids_current", *c->pids_current);
    if (c->oom_kills)
      usage.counter("oom_kills", *c->oom_kills);
    if (c->pids_refused)
      usage.counter("pids_refused", *c->pids_refused);
    if (c->disk_bytes)
      usage.gauge("disk_bytes", *c->disk_bytes);
  }
  if (tracking_on(self))
    s.group("tracking")
        .gauge("tracked_runs", st.runs.by_cookie.size())
        .counter("events_received", st.runs.events_received)
        .counter("events_lost", st.runs.events_lost)
        .counter("trace_failures", st.runs.trace_failures);
  if (tracking_on(self) && st.runs.config->write_provenance)
    s.group("writes")
        .counter("records", st.write_records)
        .counter("records_lost", st.write_records_lost)
        .gauge("live_inodes", st.writes.live().by_inode.size())
        .gauge("sealed_intervals", st.writes.sealed_count());
  s.group("turns")
      .counter("turn_count", st.turns.turn_count)
      .counter("interval_checkpoints", st.interval_checkpoints)
      .counter("interval_unchanged", st.interval_unchanged)
      .counter("interval_busy", st.interval_busy)
      .counter("auto_pruned", st.auto_pruned);
  s.group("share")
      .fact("enabled", st.share.enabled)
      .fact("permission", st.share.permission)
      .counter("served", st.share_served)
      .counter("refused", st.share_refused);
  // network.status's answer, as it is: its shape is the network facet's.
  if (st.proxy)
    add_json_entries(s.group("network"), to_json(network_status_of(self)));
  top.gauge("uptime_ms", uptime_ms(st.started));
  return s;
}

/// debug.fault: arms a fault at a named point of this actor; the probe's
/// and the reader's points (tracking.*) are the TRACKER's.
caf::result<fault_armed> handle(self_ptr self, const cmd::debug_fault& c) {
  if (c.point.rfind("tracking.", 0) == 0 && tracking_on(self))
    return self->delegate(self->state.runs.config->tracker, c);
  self->state.faults.arm(fault{c.point, c.effect, c.millis});
  return fault_armed{};
}

/// The action a command came as (the fault point and the failure log).
template <class Command>
const char* action_of(const Command&) {
  return Command::name;
}

const char* action_of(const cmd::session_rollback& c) {
  return c.after_reset ? "session.rollback_after_runtime_reset"
                       : "session.rollback";
}

/// Serves one command with its facet's handler: counted, named for the
/// failure log (left set if the handler throws), and with the fault point
/// of its action, where tests fail this actor mid-request.
template <class Command>
auto serve(self_ptr self, const Command& c) {
  auto& st = self->state;
  ++st.requests;
  st.handling = action_of(c);
  st.faults.trigger(st.handling);
  auto result = handle(self, c);
  st.handling.clear();
  return result;
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
  self->state.unsynced_intents = std::move(init.unsynced_intents);
  self->state.forks_out = std::move(init.forks_out);
  self->state.init = std::move(init);
  if (!self->state.unsynced_intents.empty())
    arm_idle_work(self);
  // A fork's baseline still being made on its source's lane: this lane's
  // first step waits for it (mutation_step), so every mutation queues
  // behind it.
  if (auto made = self->state.init.baseline_ready; made.valid())
    mutation_step<step_done>(
        self, []() -> expected<step_done> { return step_done{}; },
        [](step_done&) {},
        [self](caf::error err) {
          fence(self, err, "first step");
          // Settled: what runs after session.unfence need not wait.
          self->state.init.baseline_ready = {};
        });
  self->state.started = std::chrono::steady_clock::now();
  load_turns(self);
  load_share(self);
  load_write_sets(self);
  arm_interval(self);
  self->attach_functor(
      [lane = self->state.lane, reads = self->state.read_lane] {
        retire_lane(*lane);
        retire_lane(*reads);
      });
  // Whatever ends this actor (shutdown, failure) ends its runs too.
  if (self->state.runs.config) {
    auto group = self->state.runs.config->cgroups.session_group(
        self->state.agent_id(), self->state.session_id());
    self->attach_functor([group, cfg = self->state.runs.config] {
      if (!(cfg->live_restore && cfg->leaving->load()))
        os::kill_group(group);
    });
    adopt_runs(self, std::move(self->state.init.adopted_runs));
    thaw_leftover(self);
    enforce_disk_share(self, [self](caf::error err) {
      if (err)
        log::warn("session", self->state.key() +
                                 ": disk share not set: " + message_of(err));
    });
  }
  // An orderly stop (daemon shutdown) ends the active run first, recorded
  // as stopped with reason daemon_shutdown; with --live-restore it leaves
  // them running for the next daemon instead.
  self->set_exit_handler([self](caf::exit_msg& em) {
    if (leaving_runs(self))
      leave_runs(self);
    else
      shutdown_runs(self);
    self->quit(em.reason);
  });
  self->set_exception_handler([self](std::exception_ptr& ep) {
    return actor_failed(ep, "session " + self->state.key(),
                        self->state.handling);
  });
  // Every command of the list goes to its facet's handler through serve;
  // the rest are events from the session's own workers and timers, the
  // TRACKER, the broker and its AGENT.
  return behavior_of<session_actor::behavior_type>(
      cmd::session_commands{}, [self](const auto& c) { return serve(self, c); },
      [self](atom::retire, bool retire) { return handle_retire(self, retire); },
      [self](atom::purge) { idle_work(self); },
      [self](const wait_timeout& t) {
        on_wait_timeout(self, t.run_id, t.waiter);
      },
      [self](const run_started& e) { on_run_started(self, e.run_id, e.pid); },
      [self](const run_finished& e) { on_run_finished(self, e); },
      [self](const run_timeout& t) { kill_run(self, t.run_id, "timeout", {}); },
      [self](const cmd::egress_attempt& e) { on_egress_attempt(self, e); },
      [self](const process_event_batch& b) { on_event_batch(self, b); },
      [self](const tracking_failure& f) { on_tracking_failure(self, f); },
      [self](const write_record_batch& b) { on_write_batch(self, b); },
      [self](const cmd::agent_policy_changed& c) { on_agent_policy(self, c); },
      [self](const cmd::interval_tick& t) { on_interval_tick(self, t); },
      [self](atom::stats) { return stats_of(self); });
}

} // namespace allox
