// SPDX-License-Identifier: Apache-2.0
// The runs facet of the SESSION actor: process.start, stop and wait; the
// run worker's reports (started, finished), the run timeout, and the end
// of live runs at shutdown. session.configure is in configure.cpp. Queries
// (process.get, list, output, events, the stream's subscription) are in
// run_queries.cpp, the worker and the run rows in run_worker.cpp.
#include "actors/session/handlers.hpp"
#include "guest/log.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "guest/sandbox/bwrap_args.hpp"
#include "guest/sandbox/stdio.hpp"
#include "guest/store/run_recovery.hpp"
#include "messages/ids.hpp"
#include "messages/results/settings_json.hpp"
#include "messages/utf8.hpp"

#include <caf/send.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace allox::session_facets {

// -- tracked execution --------------------------------------------------------

caf::error no_execution() {
  return make_error(errc::unsupported,
                    "process tracking is not enabled on this daemon");
}

/// Refuses a new run while the session is at its max_runs, or holds an
/// execution lease that is not a run's. With max_runs 1 the prototype's
/// error, unchanged.
static caf::error check_run_capacity(self_ptr self, int64_t max_runs) {
  auto& st = self->state;
  if (max_runs <= 1)
    return st.leases.empty() ? caf::none
                             : conflict("session already has an active "
                                        "execution: " +
                                        st.key());
  if (st.leases.size() > st.runs.active.size())
    return conflict("session already has an active execution: " + st.key());
  if (static_cast<int64_t>(st.runs.active.size()) >= max_runs)
    return conflict("session already runs max_runs (" +
                    std::to_string(max_runs) + ") runs: " + st.key());
  return caf::none;
}

/// The audit fields of process.start.
static json::object start_fields(const run_row& row) {
  json::array argv;
  for (const auto& arg : row.argv ? *row.argv : std::vector<std::string>{})
    argv.emplace_back(arg);
  return {{"run_id", row.run_id}, {"argv", std::move(argv)}};
}

/// The audit record of a run's end: its final state and exit code.
static audit_event end_audit(self_ptr self, const run_row& row) {
  json::object fields{{"run_id", row.run_id}, {"state", to_string(row.state)}};
  fields["exit_code"] = row.root_exit_code ? json::value(*row.root_exit_code)
                                           : json::value(nullptr);
  return audit(self, "process.end", std::move(fields));
}

// Commits the run's `starting` row while its worker prepares (logs,
// cgroup), and lets the worker spawn once both are done: a daemon crash
// from then on leaves a row that start-up finds and turns into a fence.
caf::result<run_row> handle(self_ptr self, const cmd::process_start& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  if (auto err = require_alive(self))
    return err;
  if (mutating(self))
    return conflict("session is being checkpointed or restored: " + st.key());
  if (st.paused || st.pausing)
    return conflict("session is paused: " + st.key() +
                    "; session.resume first");
  auto settings = effective_settings(self);
  auto max_runs = settings.max_runs;
  if (auto err = check_run_capacity(self, max_runs))
    return err;
  const auto& cfg = *st.runs.config;
  auto id = random_hex_token();
  auto session_group =
      cfg.cgroups.session_group(st.agent_id(), st.session_id());
  auto group = max_runs > 1 ? session_group + "/runs/" + id : session_group;
  st.leases["run:" + id] = os::now_ns();
  auto& run = st.runs.runs[id];
  run.row = new_run_row(self, id, group);
  run.row.network_mode = settings.network;
  run.row.limits = to_json(settings.limits);
  run.row.argv = c.argv;
  run_launch job;
  job.run_id = id;
  job.group = group;
  job.limits_group = session_group;
  job.tree_root = cfg.cgroups.root();
  job.dir = run_dir(self, id);
  job.output_subvolume = cfg.output_subvolumes;
  if (job.output_subvolume) {
    // A quarter of the share: room for a while, without emptying the
    // session's history for one run. (No share, no room to make.)
    if (auto share = disk_share_of(cfg, settings.limits))
      job.output_room =
          std::max<int64_t>(static_cast<int64_t>(*share / 4), int64_t{1} << 20);
    for (const auto& [other, r] : st.runs.runs)
      if (r.active && other != id)
        job.live_runs.insert(other);
  }
  // The run's group takes the cgroup limits; disk.max is the
  // workspace's, already on its qgroup (disk_share.cpp).
  for (const auto& limit : settings.limits)
    if (limit.first != disk_limit)
      job.limits.push_back(limit);
  sandbox::spec spec;
  spec.bwrap = cfg.bwrap_path;
  spec.init = cfg.init_path;
  spec.current = st.init.paths.current(st.agent_id(), st.session_id());
  spec.shared = st.init.paths.agent_shared(st.agent_id());
  spec.agent_id = st.agent_id();
  spec.session_id = st.session_id();
  spec.env = c.env;
  spec.argv = c.argv;
  spec.cwd = c.cwd;
  spec.home = c.home;
  if (!c.home.empty())
    st.run_homes.insert(c.home);
  spec.isolated_network = settings.network == "isolated";
  spec.proxy_network = settings.network == "proxy";
  if (spec.proxy_network) {
    auto ns = ensure_proxy(self);
    if (!ns) {
      st.leases.erase("run:" + id);
      st.runs.runs.erase(id);
      return ns.error();
    }
    job.netns = *ns;
  }
  spec.syscall_filter = cfg.syscall_filter;
  spec.uid = cfg.sandbox_uid;
  spec.events_socket = cfg.events_socket;
  spec.turn_client = cfg.turn_client;
  spec.share_client = cfg.share_client;
  spec.network_client = cfg.network_client;
  spec.gid = cfg.sandbox_gid;
  spec.report_status = true;
  job.argv = sandbox::bwrap_argv(spec);
  job.owned_trees = {spec.current, spec.shared};
  job.uid = cfg.sandbox_uid;
  job.gid = cfg.sandbox_gid;
  // Interactive runs: the daemon keeps the writing end (process.input).
  if (c.stdin_pipe || c.pty) {
    auto io = c.pty ? sandbox::open_terminal(c.pty->rows, c.pty->cols)
                    : sandbox::open_stdin_pipe();
    if (!io) {
      st.leases.erase("run:" + id);
      st.runs.runs.erase(id);
      return io.error();
    }
    run.input = std::make_shared<os::unique_fd>(std::move(io->input));
    run.terminal = io->terminal;
    job.stdin_fd = std::make_shared<os::unique_fd>(std::move(io->child));
    if (io->terminal)
      job.terminal = run.input;
    run.row.stdin_mode = std::string{c.pty ? "pty" : "pipe"};
  }
  // A tracked run: the worker has the TRACKER attribute the run's cgroup
  // to the cookie before it spawns (tracking.cpp).
  if (tracking_on(self)) {
    run.cookie = new_cookie();
    run.row.backend = "ebpf";
    run.row.cookie = static_cast<int64_t>(run.cookie);
    run.row.events_lost = 0;
    st.runs.by_cookie[run.cookie] = id;
    job.tracker = cfg.tracker;
    job.cookie = run.cookie;
  }
  job.release = st.runs.release;
  st.runs.active.insert(id);
  auto rp = self->make_response_promise<run_row>();
  run.waiting_start.push_back(rp);
  run.worker = self->spawn<caf::detached>(
      run_worker, caf::actor_cast<session_actor>(self), std::move(job));
  // Committed, not synced: what the row guards against is a daemon that
  // dies while the run's processes live on in its cgroup, and a commit
  // survives that. A power cut takes the processes with it, so a row lost
  // there fences nothing that still runs (docs/architecture.md, "Runs").
  metadata_write w;
  w.durable = false;
  w.put_runs.push_back(store::record_of(run.row));
  w.audit.push_back(audit(self, "process.start", start_fields(run.row)));
  commit(
      self, std::move(w),
      [self, id] {
        auto it = self->state.runs.runs.find(id);
        if (it == self->state.runs.runs.end() || !it->second.worker)
          return;
        caf::anon_send(it->second.worker, atom::run_v);
        it->second.worker = nullptr;
      },
      [self, id](caf::error err) {
        auto it = self->state.runs.runs.find(id);
        if (it == self->state.runs.runs.end() || !it->second.worker)
          return;
        caf::anon_send(it->second.worker, atom::retire_v);
        it->second.worker = nullptr;
        on_run_finished(
            self, run_finished{id, caf::none, true,
                               "cannot record the run: " + message_of(err)});
      });
  self->delayed_send(
      self, std::chrono::milliseconds(static_cast<int64_t>(c.timeout * 1000)),
      run_timeout{id});
  return rp;
}

/// Pushes the run's row to its live streams; a stream that has gone is
/// forgotten, and all are once the run has ended.
static void notify_streams(run_state& run) {
  auto& sinks = run.sinks;
  sinks.erase(std::remove_if(sinks.begin(), sinks.end(),
                             [&](const std::shared_ptr<run_sink>& sink) {
                               return !sink->push(run.row);
                             }),
              sinks.end());
  if (!run.active)
    sinks.clear();
}

void kill_run(self_ptr self, const std::string& id, const std::string& reason,
              std::function<void()> then) {
  auto& st = self->state;
  auto it = st.runs.runs.find(id);
  if (it == st.runs.runs.end() || !it->second.active) {
    if (then)
      then();
    return;
  }
  auto& row = it->second.row;
  if (!row.stop_reason)
    row.stop_reason = reason;
  if (then)
    it->second.on_end.push_back(std::move(then));
  notify_streams(it->second);
  if (auto err = os::kill_group(row.cgroup))
    log::warn("session", st.key() + ": " + message_of(err));
}

void kill_runs(self_ptr self, const std::string& reason,
               std::function<void(json::array)> then) {
  auto ids = self->state.runs.active;
  json::array killed;
  for (const auto& id : ids)
    killed.emplace_back(id);
  if (ids.empty()) {
    then(std::move(killed));
    return;
  }
  // Each run calls back once it has ended; the last one continues.
  auto left = std::make_shared<size_t>(ids.size());
  auto done = [left, then = std::move(then), killed]() mutable {
    if (--*left == 0)
      then(std::move(killed));
  };
  for (const auto& id : ids)
    kill_run(self, id, reason, done);
}

void on_run_started(self_ptr self, const std::string& id, int64_t pid) {
  auto it = self->state.runs.runs.find(id);
  if (it == self->state.runs.runs.end())
    return;
  auto& run = it->second;
  run.row.state = run_phase::running;
  run.row.root_pid = pid;
  for (auto& rp : run.waiting_start)
    rp.deliver(run.row);
  run.waiting_start.clear();
  notify_streams(run);
  persist_run(self, run.row);
}

void on_run_finished(self_ptr self, const run_finished& e) {
  auto& st = self->state;
  const auto& id = e.run_id;
  bool empty = e.cgroup_empty;
  auto it = st.runs.runs.find(id);
  if (it == st.runs.runs.end() || !it->second.active)
    return;
  auto& run = it->second;
  auto& row = run.row;
  if (e.exit_code)
    row.root_exit_code = *e.exit_code;
  // The kernel killed part of the run for memory: a stop, and the reason
  // callers ask for (unless the run was being stopped already).
  if (e.oom_kills > 0 && !row.stop_reason)
    row.stop_reason = "oom_killed";
  auto error = adopted_end_error(run, e);
  bool ok = empty && !error;
  if (error)
    row.error = *error;
  row.state = !ok               ? run_phase::failed
              : row.stop_reason ? run_phase::stopped
                                : run_phase::completed;
  row.session_fenced = !empty;
  row.lifecycle_complete = ok;
  row.finished_ns = os::now_ns();
  run.active = false;
  run.worker = nullptr;
  run.input = nullptr;
  st.runs.active.erase(id);
  const auto& group = row.cgroup;
  if (empty) {
    auto session_group =
        st.runs.config->cgroups.session_group(st.agent_id(), st.session_id());
    // The counts of a removed group are gone with it: keep them (read
    // before, kept once the group is gone).
    os::group_counters before;
    if (st.runs.active.empty())
      before = os::read_counters(session_group);
    os::remove_group(group);
    // Several runs: their parent groups go with the last of them.
    if (group != session_group && st.runs.active.empty()) {
      os::remove_group(session_group + "/runs");
      os::remove_group(session_group);
    }
    if (before.present && !os::read_counters(session_group).present) {
      os::add_retired(st.runs.retired_usage, before);
      st.runs.usage_cache.reset(); // it still holds the retired counts
    }
  }
  // A tracked run's row is final once the TRACKER has handed over every
  // event the kernel produced for it (tracking.cpp).
  run.draining = run.cookie != 0;
  drain_run(self, id, [self, id] { finish_run(self, id); });
}

void finish_run(self_ptr self, const std::string& id) {
  auto& st = self->state;
  auto it = st.runs.runs.find(id);
  if (it == st.runs.runs.end())
    return;
  auto& run = it->second;
  run.draining = false;
  auto& row = run.row;
  bool empty = !row.session_fenced;
  if (run.trace_failed) {
    // An incomplete trace: the run failed, and the session stays fenced
    // like after an interrupted run, until session.unfence.
    row.state = run_phase::failed;
    row.session_fenced = true;
    st.runs.interrupted.push_back(id);
    ++st.runs.trace_failures;
  } else if (empty) {
    // The lease goes with the last process; a group that would not empty
    // keeps the session fenced.
    st.leases.erase("run:" + id);
  }
  // With auto_checkpoint_runs, a successful run is checkpointed before
  // anyone hears of its end (policy.cpp).
  after_run(self, id, [self, id](caf::error strict_failure) {
    answer_run(self, id, strict_failure);
  });
}

void answer_run(self_ptr self, const std::string& id,
                const caf::error& strict_failure) {
  auto it = self->state.runs.runs.find(id);
  if (it == self->state.runs.runs.end())
    return;
  auto& run = it->second;
  auto& row = run.row;
  auto answer = [&row, &strict_failure](auto& rp) {
    if (strict_failure)
      rp.deliver(strict_failure);
    else
      rp.deliver(row);
  };
  // A run that failed to start: the failed row tells what happened.
  for (auto& rp : run.waiting_start)
    answer(rp);
  run.waiting_start.clear();
  for (auto& rp : run.waiting_end)
    answer(rp);
  run.waiting_end.clear();
  for (auto& [waiter, rp] : run.waiters)
    answer(rp);
  run.waiters.clear();
  notify_streams(run);
  auto callbacks = std::move(run.on_end);
  run.on_end.clear();
  persist_run(self, row, end_audit(self, row));
  for (auto& f : callbacks)
    f();
}

void shutdown_runs(self_ptr self) {
  auto& st = self->state;
  if (!st.runs.config || st.runs.active.empty())
    return;
  metadata_write w;
  w.durable = false;
  for (const auto& id : st.runs.active) {
    auto& row = st.runs.runs[id].row;
    const auto& group = row.cgroup;
    row.stop_reason = "daemon_shutdown";
    os::kill_group(group);
    // Shutdown only: waiting here is the point (at most 10 s per run).
    bool empty = os::wait_empty(group, 10000);
    row.state = empty ? run_phase::stopped : run_phase::failed;
    row.session_fenced = !empty;
    row.lifecycle_complete = empty;
    row.finished_ns = os::now_ns();
    if (empty)
      os::remove_group(group);
    w.put_runs.push_back(store::record_of(row));
    w.audit.push_back(end_audit(self, row));
  }
  // METADATA stops only after every session has ended (ordered shutdown),
  // and commits what it was sent first.
  caf::anon_send(st.init.metadata, atom::write_v, std::move(w));
}

caf::result<run_row> handle(self_ptr self, const cmd::process_stop& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto it = st.runs.runs.find(c.run_id);
  if (it == st.runs.runs.end())
    return make_error(errc::invalid_argument,
                      "cannot control a historical run");
  if (!it->second.active && !it->second.draining)
    return it->second.row;
  auto rp = self->make_response_promise<run_row>();
  it->second.waiting_end.push_back(rp);
  if (it->second.active)
    kill_run(self, c.run_id, "requested", {});
  return rp;
}

/// The daemon's end of a live run's input, or why there is none.
static expected<run_state*> interactive_run(self_ptr self,
                                            const std::string& id) {
  auto& runs = self->state.runs.runs;
  auto it = runs.find(id);
  if (it == runs.end())
    return make_error(errc::invalid_argument,
                      "cannot control a historical run");
  if (!it->second.active)
    return make_error(errc::conflict, "run has ended: " + id);
  if (it->second.adopted && it->second.row.stdin_mode)
    return make_error(errc::conflict,
                      "run's input was closed by a daemon restart: " + id);
  if (!it->second.input || !*it->second.input)
    return make_error(errc::invalid_argument,
                      "run has no input (start it with stdin or pty)");
  return &it->second;
}

// Writes without blocking the actor: what the run has not read yet stays
// in the pipe (64 KiB) or the terminal's buffer, and the caller learns how
// much was taken (`written`) and sends the rest later.
caf::result<input_result> handle(self_ptr self, const cmd::process_input& c) {
  if (!self->state.runs.config)
    return no_execution();
  auto run = interactive_run(self, c.run_id);
  if (!run)
    return run.error();
  auto& r = **run;
  auto written = sandbox::write_input(r.input->get(), c.data);
  if (!written)
    return written.error();
  bool closed = false;
  if (c.eof && *written == c.data.size()) {
    if (r.terminal) {
      // ^D: the end of input for a terminal in canonical mode.
      auto eot = sandbox::write_input(r.input->get(), "\x04");
      closed = eot && *eot == 1;
    } else {
      r.input = nullptr;
      closed = true;
    }
  }
  return input_result{c.run_id, static_cast<int64_t>(*written), closed};
}

caf::result<resize_result> handle(self_ptr self, const cmd::process_resize& c) {
  if (!self->state.runs.config)
    return no_execution();
  auto run = interactive_run(self, c.run_id);
  if (!run)
    return run.error();
  if (!(*run)->terminal)
    return make_error(errc::invalid_argument, "run has no terminal");
  if (auto err = sandbox::resize_terminal((*run)->input->get(), c.size.rows,
                                          c.size.cols))
    return err;
  return resize_result{c.run_id, c.size.rows, c.size.cols};
}

// Answers the moment the run ends, so callers never poll: the promise
// waits in the run's state until on_run_finished, or until its own
// timeout message answers it with the row as it is then.
caf::result<run_row> handle(self_ptr self, const cmd::process_wait& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto it = st.runs.runs.find(c.run_id);
  if (it == st.runs.runs.end())
    return handle(self, cmd::process_get{c.session, c.run_id});
  auto& run = it->second;
  if ((!run.active && !run.draining) || c.timeout_ms == 0)
    return run.row;
  auto waiter = st.runs.next_waiter++;
  auto rp = self->make_response_promise<run_row>();
  run.waiters.emplace(waiter, rp);
  self->delayed_send(self, std::chrono::milliseconds{c.timeout_ms},
                     wait_timeout{c.run_id, waiter});
  return rp;
}

void on_wait_timeout(self_ptr self, const std::string& id, uint64_t waiter) {
  auto& runs = self->state.runs.runs;
  auto it = runs.find(id);
  if (it == runs.end())
    return;
  auto& waiters = it->second.waiters;
  if (auto w = waiters.find(waiter); w != waiters.end()) {
    w->second.deliver(it->second.row);
    waiters.erase(w);
  }
}

} // namespace allox::session_facets
