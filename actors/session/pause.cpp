// SPDX-License-Identifier: Apache-2.0
// session.pause, session.resume and session.usage.
//
// A pause with memory freezes the session's cgroup (cgroup.freeze: every
// process stopped where it can be thawed unchanged, its memory kept) and
// then checkpoints current/ while nothing can write to it, so the
// checkpoint holds every write acknowledged before the pause. Without
// memory the runs are stopped first. Either way no run starts until
// session.resume; the files stay readable and writable through file.*.
// The frozen state lives in the kernel, not the catalog: after a daemon
// restart a group left frozen with runs in it (adopted, adoption.cpp) is
// still paused, and session.resume thaws it; one without runs is thawed.
#include "actors/session/pause.hpp"

#include "actors/session/checkpoints.hpp"
#include "actors/session/runs.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"

#include <sys/sysinfo.h>

namespace allox::session_facets {

namespace {

/// How long a pause waits for the runs to freeze (a process in an
/// uninterruptible sleep delays it), as a live checkpoint does.
constexpr int pause_freeze_timeout_ms = 2000;

std::string session_group(self_ptr self) {
  auto& st = self->state;
  if (!st.runs.config)
    return {};
  return st.runs.config->cgroups.session_group(st.agent_id(), st.session_id());
}

/// The checkpoint of the held files; on failure the pause is undone.
void checkpoint_paused(self_ptr self, const cmd::session_pause& c,
                       caf::typed_response_promise<pause_result> rp) {
  params::checkpoint_create req;
  req.origin = c.origin;
  req.message = c.message.empty() ? std::string{"pause"} : c.message;
  // Marks the checkpoint as a pause's, for whoever lists them later.
  req.metadata = json::serialize(
      json::object{{"pause", {{"kept_memory", c.keep_memory}}}});
  create_checkpoint(
      self, req,
      [self, rp, keep = c.keep_memory](expected<checkpoint_row> r) mutable {
        auto& st = self->state;
        st.pausing = false;
        if (!r) {
          (void)os::thaw_group(st.frozen_group);
          st.frozen_group.clear();
          st.paused_runs.clear();
          rp.deliver(r.error());
          return;
        }
        st.paused = true;
        rp.deliver(pause_result{st.agent_id(), st.session_id(), std::move(*r),
                                keep, st.paused_runs});
      });
}

} // namespace

caf::result<pause_result> handle(self_ptr self, const cmd::session_pause& c) {
  auto& st = self->state;
  if (st.paused || st.pausing)
    return conflict("session is already paused: " + st.key());
  if (auto err = require_checkpointable(self))
    return err;
  auto rp = self->make_response_promise<pause_result>();
  st.pausing = true;
  st.paused_runs.assign(st.runs.active.begin(), st.runs.active.end());
  auto group = session_group(self);
  if (st.runs.active.empty() || group.empty()) {
    checkpoint_paused(self, c, rp);
    return rp;
  }
  if (!c.keep_memory) {
    kill_runs(self, "paused",
              [self, c, rp](json::array) { checkpoint_paused(self, c, rp); });
    return rp;
  }
  blocking<std::string>(
      self,
      [group]() -> expected<std::string> {
        auto held = os::frozen_group::freeze(group, pause_freeze_timeout_ms);
        if (!held)
          return held.error();
        return std::move(*held).release();
      },
      [self, c, rp](std::string& frozen) {
        // Held from here on: checkpoints skip their own freeze and thaw.
        self->state.frozen_group = frozen;
        checkpoint_paused(self, c, rp);
      },
      [self, rp](caf::error err) mutable {
        self->state.pausing = false;
        self->state.paused_runs.clear();
        rp.deliver(std::move(err));
      });
  return rp;
}

caf::result<resume_result> handle(self_ptr self, const cmd::session_resume&) {
  auto& st = self->state;
  if (auto err = require_alive(self))
    return err;
  if (!st.paused)
    return conflict(st.pausing ? "session is still pausing: " + st.key()
                               : "session is not paused: " + st.key());
  // One write to cgroupfs: thawing does not wait for the processes.
  if (auto err = os::thaw_group(st.frozen_group))
    return err;
  resume_result r{st.agent_id(), st.session_id(),
                  st.frozen_group.empty() ? std::vector<std::string>{}
                                          : st.paused_runs};
  st.paused = false;
  st.frozen_group.clear();
  st.paused_runs.clear();
  return r;
}

caf::result<usage_report> handle(self_ptr self, const cmd::session_usage&) {
  auto& st = self->state;
  if (auto err = require_alive(self))
    return err;
  usage_report base;
  base.agent_id = st.agent_id();
  base.session_id = st.session_id();
  base.paused = st.paused;
  base.runs = static_cast<uint32_t>(st.runs.active.size());
  auto group = session_group(self);
  auto current = st.init.paths.current(st.agent_id(), st.session_id());
  // The walk of current/ takes as long as the tree is large: off the
  // scheduler, on a thread of its own so it never queues behind a
  // mutation.
  return answer_blocking<usage_report>(
      self, [base, group, current]() mutable -> expected<usage_report> {
        auto u = base;
        u.sampled_ns = os::now_ns();
        struct sysinfo si {};
        if (::sysinfo(&si) == 0)
          u.memory_total_bytes =
              static_cast<int64_t>(si.totalram) * si.mem_unit;
        if (!group.empty()) {
          auto g = os::read_usage(group);
          const auto& c = g.counters;
          u.processes = g.processes;
          u.cpu_usage_usec = c.cpu_usage_usec;
          u.cpu_user_usec = g.cpu_user_usec;
          u.cpu_system_usec = g.cpu_system_usec;
          u.memory_bytes = g.memory_bytes;
          u.memory_source = g.memory_from_cgroup ? "cgroup" : "processes";
          if (c.memory_peak_bytes)
            u.memory_peak_bytes = *c.memory_peak_bytes;
          if (c.pids_current)
            u.pids_current = *c.pids_current;
          if (g.memory_max_bytes)
            u.memory_total_bytes = *g.memory_max_bytes;
          if (c.oom_kills)
            u.oom_kills = *c.oom_kills;
          if (c.pids_refused)
            u.pids_refused = *c.pids_refused;
        }
        u.disk_used_bytes = os::allocated_bytes(current);
        auto space = os::space_of(current);
        u.disk_total_bytes = space.total_bytes;
        u.disk_free_bytes = space.free_bytes;
        return u;
      });
}

void thaw_leftover(self_ptr self) {
  auto group = session_group(self);
  if (group.empty())
    return;
  auto& st = self->state;
  // At start the active runs are the adopted ones, frozen by the pause of
  // the daemon that started them: the session is paused still.
  if (!st.runs.active.empty() && os::freeze_requested(group)) {
    st.paused = true;
    st.frozen_group = group;
    st.paused_runs.assign(st.runs.active.begin(), st.runs.active.end());
    return;
  }
  (void)os::thaw_group(group);
}

} // namespace allox::session_facets
