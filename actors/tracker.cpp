// SPDX-License-Identifier: Apache-2.0
// The TRACKER (actors/tracker.hpp).
//
//   reader thread            TRACKER                      SESSION(s)
//   -------------            -------                      ----------
//   poll ring, decode  --reader_batch-->  split by cookie
//   --process_event_batch-->
//                                          check losses   --tracking_failure-->
//   on error           --reader_failed-->  fail all runs, drop probe,
//                                          reload after back-off
//   SESSION: track(cgroup, cookie) before the run's first process;
//            untrack(cookie) once its cgroup is empty -> trace_summary
//            when every produced record arrived (or at a deadline).
#include "actors/tracker.hpp"

#include "actors/dump.hpp"
#include "guest/log.hpp"
#include "messages/results/stats_json.hpp"
#include "tracking/events.hpp"

#include <caf/send.hpp>

#include <algorithm>
#include <map>
#include <utility>

namespace allox {

namespace {

using self_ptr = tracker_actor::stateful_pointer<tracker_state>;

/// How often pending drains are checked.
constexpr std::chrono::milliseconds drain_tick{5};

/// How long the reader gathers a burst of events into one batch. Each
/// batch costs a few thread wakeups (reader, TRACKER, session, its read
/// lane) whatever its size; 20 ms halves them against 10 and measured
/// cheaper (docs/benchmarks.md). A run's end does not wait for it: drains
/// hurry the reader.
constexpr int batch_interval_ms = 20;

// The kinds a session sees are the kernel's pinned record types.
static_assert(static_cast<int>(process_event_kind::fork) == ALLOX_EVENT_FORK &&
              static_cast<int>(process_event_kind::exec) == ALLOX_EVENT_EXEC &&
              static_cast<int>(process_event_kind::exit) == ALLOX_EVENT_EXIT);

/// The session's view of one decoded (fork, exec or exit) event.
process_record to_record(const tracking::process_event& ev,
                         const std::string& boot_id) {
  process_record r;
  const auto& hdr = tracking::header_of(ev);
  r.cookie = hdr.cookie;
  r.kernel_seq = hdr.seq;
  r.time_ns = hdr.time_ns;
  r.pid = hdr.process.tgid;
  r.process_id = hdr.process.str(boot_id);
  r.root = hdr.root;
  if (const auto* f = std::get_if<tracking::fork_event>(&ev)) {
    r.kind = process_event_kind::fork;
    r.ppid = f->parent.tgid;
    r.tid = f->hdr.process.tgid;
    r.parent_process_id = f->parent.str(boot_id);
    r.comm = f->comm;
  } else if (const auto* x = std::get_if<tracking::exec_event>(&ev)) {
    r.kind = process_event_kind::exec;
    r.tid = x->former_tid;
    r.comm = x->comm;
    r.filename = x->filename;
  } else if (const auto* e = std::get_if<tracking::exit_event>(&ev)) {
    r.kind = process_event_kind::exit;
    r.tid = e->tid;
    r.comm = e->comm;
    if (auto code = e->exit_code())
      r.exit_code = int64_t{*code};
    if (auto sig = e->signal())
      r.signal = int64_t{*sig};
  }
  return r;
}

/// The session's view of one write record.
write_record to_write_record(const tracking::process_event& ev,
                             const std::string& boot_id) {
  write_record r;
  const auto& hdr = tracking::header_of(ev);
  r.cookie = hdr.cookie;
  r.time_ns = hdr.time_ns;
  r.process_id = hdr.process.str(boot_id);
  r.pid = hdr.process.tgid;
  if (const auto* w = std::get_if<tracking::write_event>(&ev)) {
    r.tid = w->tid;
    r.op = w->op;
    r.subvol = w->subvol;
    r.ino = w->ino;
  } else if (const auto* p = std::get_if<tracking::write_path_event>(&ev)) {
    r.tid = p->tid;
    r.op = p->op;
    r.subvol = p->subvol;
    r.ino = p->dir_ino;
    r.by_name = true;
    r.path = p->path;
    r.absolute = p->absolute;
  }
  return r;
}

/// Tells each session owning one of `cookies` that their traces are
/// incomplete; the runs are failed and fenced by their sessions.
void fail_runs(self_ptr self, const std::vector<uint64_t>& cookies,
               const std::string& reason) {
  auto& st = self->state;
  std::map<caf::actor_addr, std::pair<session_tracking_actor, tracking_failure>>
      by_session;
  for (auto cookie : cookies) {
    auto it = st.runs.find(cookie);
    if (it == st.runs.end() || it->second.failed)
      continue;
    auto& run = it->second;
    run.failed = true;
    ++st.runs_failed;
    auto& entry = by_session[run.session.address()];
    entry.first = run.session;
    entry.second.cookies.push_back(cookie);
    entry.second.lost.push_back(run.lost);
    entry.second.reason = reason;
  }
  for (auto& [addr, entry] : by_session)
    self->send(entry.first, std::move(entry.second));
  if (!by_session.empty())
    log::warn("tracker", reason + " (" + std::to_string(by_session.size()) +
                             " session(s))");
}

/// The kernel's losses grew: the runs whose own loss counter grew are
/// failed; a loss no run owns (other than records of untracked runs)
/// fails every run, since any of them may miss an event.
void check_losses(self_ptr self, const bpf::loss_counters& now) {
  auto& st = self->state;
  if (now == st.losses)
    return;
  bool unattributed = false;
  for (size_t i = 0; i < ALLOX_LOSS_CAUSES; ++i) {
    auto before = st.losses.by_cause[i];
    if (now.by_cause[i] <= before)
      continue;
    st.lost[i] += now.by_cause[i] - before;
    // Lost write records never fail a run: they leave its changes
    // unattributed, which the run's own writes_lost tells.
    if (i != ALLOX_LOSS_NO_RUN && i != ALLOX_LOSS_RINGBUF_WRITE)
      unattributed = true;
  }
  st.losses = now;
  if (!st.probe)
    return;
  std::vector<uint64_t> affected;
  for (auto& [cookie, run] : st.runs) {
    auto c = st.probe->counters(cookie);
    if (c && c->lost > run.lost) {
      run.lost = c->lost;
      affected.push_back(cookie);
    }
  }
  if (!affected.empty())
    unattributed = false;
  if (unattributed)
    for (const auto& [cookie, run] : st.runs)
      affected.push_back(cookie);
  fail_runs(self, affected, "process events lost in the kernel");
}

/// Untracks a run and answers its drains with the final counters.
void finish_drain(self_ptr self, uint64_t cookie) {
  auto& st = self->state;
  auto it = st.runs.find(cookie);
  if (it == st.runs.end())
    return;
  auto& run = it->second;
  trace_summary s;
  s.received = run.received;
  s.lost = run.lost;
  if (st.probe) {
    auto c = st.probe->counters(cookie);
    if (c) {
      s.produced = c->produced;
      s.lost = std::max(s.lost, c->lost);
    }
    auto final_counters = st.probe->untrack(run.cgroup_id);
    if (final_counters) {
      s.produced = std::max(s.produced, final_counters->produced);
      s.lost = std::max(s.lost, final_counters->lost);
    }
  }
  s.drained = st.probe && s.received >= s.produced;
  if (s.produced > s.received) {
    st.lost_at_drain += s.produced - s.received;
    s.lost += s.produced - s.received;
  }
  if (!st.probe)
    s.lost = std::max<uint64_t>(s.lost, 1);
  if (!run.drains.empty()) {
    st.drain_us_last = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now() - run.drain_started)
                           .count();
    st.drain_us_max = std::max(st.drain_us_max, st.drain_us_last);
  }
  for (auto& rp : run.drains)
    rp.deliver(s);
  st.runs.erase(it);
}

/// Whether every record the kernel produced for the run has arrived.
bool drained(self_ptr self, const tracked_run& run, uint64_t cookie) {
  auto& st = self->state;
  if (!st.probe)
    return true;
  auto c = st.probe->counters(cookie);
  return !c || run.received >= c->produced;
}

void arm_tick(self_ptr self) {
  if (self->state.tick_armed)
    return;
  self->state.tick_armed = true;
  self->delayed_send(self, drain_tick, atom::tick_v);
}

/// Answers the drains that are complete or past their deadline.
void check_drains(self_ptr self) {
  auto& st = self->state;
  auto now = std::chrono::steady_clock::now();
  std::vector<uint64_t> done;
  bool waiting = false;
  for (auto& [cookie, run] : st.runs) {
    if (run.drains.empty())
      continue;
    if (drained(self, run, cookie) || now >= run.deadline)
      done.push_back(cookie);
    else
      waiting = true;
  }
  for (auto cookie : done)
    finish_drain(self, cookie);
  if (waiting) {
    // A run's last records may have reached the ring after the reader
    // was last hurried: they must not wait for their batch either.
    if (st.reader)
      st.reader->hurry();
    arm_tick(self);
  }
}

void schedule_restart(self_ptr self) {
  auto& st = self->state;
  st.backoff = st.backoff.count() == 0
                   ? st.init.first_backoff
                   : std::min(st.backoff * 2, st.init.max_backoff);
  self->delayed_send(self, st.backoff, atom::restart_v);
}

/// Starts a reader on the current probe with the armed reader faults.
caf::error start_reader(self_ptr self) {
  auto& st = self->state;
  auto opts = st.init.reader;
  opts.faults = st.faults.take("tracking.reader");
  auto handle = caf::actor_cast<tracker_actor>(self);
  auto gen = st.generation;
  auto reader = tracking::ring_reader::start(
      *st.probe,
      [handle, gen](tracking::event_batch batch) {
        caf::anon_send(
            handle,
            reader_batch{gen, std::make_shared<const tracking::event_batch>(
                                  std::move(batch))});
      },
      [handle, gen](const caf::error& err) {
        caf::anon_send(handle, reader_failed{gen, message_of(err)});
      },
      std::move(opts));
  if (!reader)
    return reader.error();
  st.reader = std::move(*reader);
  return caf::none;
}

/// Loads the probe and starts its reader; on failure, tries again later.
void start_probe(self_ptr self) {
  auto& st = self->state;
  ++st.generation;
  st.losses = {};
  auto opts = st.init.probe;
  opts.faults = st.faults.take("tracking.probe");
  auto probe = bpf::process_probe::open(std::move(opts));
  caf::error err;
  if (probe) {
    st.probe = std::move(*probe);
    err = start_reader(self);
  } else {
    err = probe.error();
  }
  if (err) {
    st.reader = nullptr;
    st.probe = nullptr;
    st.ready = false;
    st.error = "cannot start the process probe: " + message_of(err);
    log::error("tracker", st.error + "; retrying in a moment");
    schedule_restart(self);
    return;
  }
  st.ready = true;
  st.backoff = std::chrono::milliseconds{0};
  log::info("tracker", "process probe loaded (generation " +
                           std::to_string(st.generation) + ")");
}

/// The reader (or the probe under it) failed: every tracked run's trace is
/// incomplete. The probe goes, and comes back after a back-off.
void on_failure(self_ptr self, const std::string& reason) {
  auto& st = self->state;
  st.ready = false;
  st.error = reason;
  std::vector<uint64_t> cookies;
  for (const auto& [cookie, run] : st.runs)
    cookies.push_back(cookie);
  fail_runs(self, cookies, "process tracker failed: " + reason);
  st.runs_lost_to_failure += cookies.size();
  st.reader = nullptr;
  st.probe = nullptr;
  // The kernel state went with the probe: drains answer at once.
  for (auto cookie : cookies)
    if (!st.runs[cookie].drains.empty())
      finish_drain(self, cookie);
  st.runs.clear();
  ++st.restarts;
  schedule_restart(self);
}

/// The TRACKER's stats; its counters group is also tracker.status.
actor_stats stats_of(self_ptr self) {
  const auto& st = self->state;
  actor_stats s;
  s.kind = "tracker";
  s.top()
      .fact("state", st.ready ? "ready" : "down")
      .gauge("mailbox", self->mailbox().size());
  auto c = s.group("counters");
  c.fact("backend", "ebpf")
      .fact("abi", ALLOX_PROCESS_ABI)
      .fact("ready", st.ready)
      .counter("generation", st.generation)
      .counter("events_received", st.events_received)
      .fact("write_provenance", st.probe && st.probe->writes_on())
      .counter("write_records", st.write_records)
      .counter("batches", st.batches);
  auto lost = c.group("events_lost");
  uint64_t total = 0;
  for (size_t i = 0; i < ALLOX_LOSS_CAUSES; ++i) {
    lost.counter(std::string{bpf::loss_cause_name(i)}, st.lost[i]);
    total += st.lost[i];
  }
  lost.counter("drain_timeout", st.lost_at_drain)
      .counter("runs_lost_to_failure", st.runs_lost_to_failure)
      .counter("total", total + st.lost_at_drain);
  c.counter("decode_errors", st.decode_errors)
      .counter("restarts", st.restarts)
      .gauge("tracked_runs", st.runs.size())
      .counter("runs_tracked", st.runs_tracked)
      .counter("runs_failed", st.runs_failed)
      .gauge("ring_bytes", st.init.probe.ring_bytes);
  c.group("drain_us")
      .gauge("last", st.drain_us_last)
      .gauge("max", st.drain_us_max);
  if (st.error.empty())
    c.fact("error", nullptr);
  else
    c.fact("error", st.error);
  s.top().gauge("uptime_ms", uptime_ms(st.started));
  return s;
}

/// tracker.status: the counters of its stats, as system.dump shows them.
void on_batch(self_ptr self, const reader_batch& rb) {
  auto& st = self->state;
  const auto& batch = *rb.batch;
  ++st.batches;
  std::map<caf::actor_addr,
           std::pair<session_tracking_actor, process_event_batch>>
      out;
  std::map<caf::actor_addr,
           std::pair<session_tracking_actor, write_record_batch>>
      writes;
  for (const auto& ev : batch.events) {
    auto cookie = tracking::header_of(ev).cookie;
    auto it = st.runs.find(cookie);
    if (it == st.runs.end())
      continue; // a run untracked meanwhile, or of an earlier probe
    if (!tracking::is_process_event(ev)) {
      ++st.write_records;
      auto& entry = writes[it->second.session.address()];
      entry.first = it->second.session;
      entry.second.records.push_back(to_write_record(ev, batch.boot_id));
      continue;
    }
    ++it->second.received;
    ++st.events_received;
    auto& entry = out[it->second.session.address()];
    if (!entry.first) {
      entry.first = it->second.session;
      entry.second.events.reserve(batch.events.size());
    }
    entry.second.events.push_back(to_record(ev, batch.boot_id));
  }
  // Lost write records: the runs whose count grew, told to their sessions
  // (which mark the interval's changes unattributed, never fail the run).
  auto write_losses =
      batch.counters.kernel_losses.by_cause[ALLOX_LOSS_RINGBUF_WRITE];
  if (rb.generation == st.generation && st.probe &&
      write_losses > st.losses.by_cause[ALLOX_LOSS_RINGBUF_WRITE]) {
    for (auto& [cookie, run] : st.runs) {
      auto c = st.probe->counters(cookie);
      if (!c || c->writes_lost <= run.writes_lost)
        continue;
      auto& entry = writes[run.session.address()];
      entry.first = run.session;
      entry.second.lost.emplace_back(cookie, c->writes_lost - run.writes_lost);
      run.writes_lost = c->writes_lost;
    }
  }
  for (auto& [addr, entry] : out)
    self->send(entry.first, std::move(entry.second));
  for (auto& [addr, entry] : writes)
    self->send(entry.first, std::move(entry.second));
  // Counters of an earlier probe say nothing about this one's runs.
  if (rb.generation == st.generation && st.probe) {
    st.decode_errors = batch.counters.decode_errors.total();
    check_losses(self, batch.counters.kernel_losses);
  }
  check_drains(self);
}

} // namespace

tracker_actor::behavior_type
tracker(tracker_actor::stateful_pointer<tracker_state> self,
        tracker_init init) {
  self->state.init = std::move(init);
  // A burst of events reaches the sessions as a few batches, not one
  // message per kernel wakeup (docs/benchmarks.md); a run's drain does not
  // wait for its batch to be due (the reader is hurried).
  if (self->state.init.reader.min_batch_interval_ms == 0)
    self->state.init.reader.min_batch_interval_ms = batch_interval_ms;
  self->state.started = std::chrono::steady_clock::now();
  start_probe(self);
  // A session that ends takes its runs' tracking with it.
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    st.sessions.erase(dm.source);
    std::vector<uint64_t> gone;
    for (const auto& [cookie, run] : st.runs)
      if (run.session.address() == dm.source)
        gone.push_back(cookie);
    for (auto cookie : gone) {
      if (st.probe)
        (void)st.probe->untrack(st.runs[cookie].cgroup_id);
      st.runs.erase(cookie);
    }
  });
  return {
      [self](atom::track, const std::string& cgroup, uint64_t cookie,
             session_tracking_actor session) -> caf::result<caf::ok_atom> {
        auto& st = self->state;
        if (!st.ready || !st.probe)
          return make_error(errc::unsupported,
                            "process tracker is not ready: " + st.error);
        if (cookie == 0 || st.runs.count(cookie) > 0)
          return make_error(errc::invalid_argument,
                            "bad or duplicate run cookie");
        auto id = bpf::cgroup_id(cgroup);
        if (!id)
          return id.error();
        if (auto err = st.probe->track(*id, cookie))
          return err;
        auto& run = st.runs[cookie];
        run.cgroup_id = *id;
        run.session = session;
        ++st.runs_tracked;
        if (st.sessions.insert(session.address()).second)
          self->monitor(session);
        return caf::ok_atom_v;
      },
      [self](atom::untrack, uint64_t cookie) -> caf::result<trace_summary> {
        auto& st = self->state;
        auto it = st.runs.find(cookie);
        if (it == st.runs.end()) {
          // Lost with a failed probe (or never tracked): nothing vouches
          // for the trace.
          trace_summary s;
          s.lost = 1;
          return s;
        }
        auto rp = self->make_response_promise<trace_summary>();
        if (it->second.drains.empty())
          it->second.drain_started = std::chrono::steady_clock::now();
        it->second.drains.push_back(rp);
        it->second.deadline =
            std::chrono::steady_clock::now() + st.init.drain_deadline;
        // Hurries the reader while the drain waits: the run's last events
        // may be waiting for their batch.
        check_drains(self);
        return rp;
      },
      [self](const reader_batch& rb) { on_batch(self, rb); },
      [self](const reader_failed& f) {
        if (f.generation != self->state.generation || !self->state.probe)
          return;
        on_failure(self, f.reason);
      },
      [self](atom::restart) {
        if (self->state.probe)
          return;
        if (self->state.generation > 0 && !self->state.error.empty())
          log::info("tracker", "reloading the process probe");
        start_probe(self);
      },
      [self](atom::tick) {
        self->state.tick_armed = false;
        check_drains(self);
      },
      [self](atom::seal) {
        if (self->state.probe)
          self->state.probe->next_write_generation();
      },
      [self](const cmd::debug_fault& c) -> caf::result<fault_armed> {
        auto& st = self->state;
        if (!fault_injection_enabled())
          return make_error(errc::unsupported,
                            "fault injection is not built in");
        st.faults.arm(fault{c.point, c.effect, c.millis});
        // A reader's faults are fixed when it starts: a running one is
        // replaced (stop() hands over what is in the ring first).
        if (c.point.rfind("tracking.reader", 0) == 0 && st.reader) {
          st.reader->stop();
          st.reader = nullptr;
          if (auto err = start_reader(self)) {
            on_failure(self, message_of(err));
          }
        }
        return fault_armed{};
      },
      [self](atom::stats) { return stats_of(self); },
  };
}

} // namespace allox
