// SPDX-License-Identifier: Apache-2.0
// Runs that outlived the daemon (guest/store/run_recovery.hpp): a session
// takes them back when its first actor starts and follows each to its end,
// so process.wait, process.output and the fronts' streams (E2B's Connect)
// go on across a daemon restart. Their stdin and terminal went with the
// daemon that held them; their output went to their logs all along.
#include "actors/session/handlers.hpp"
#include "guest/log.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/store/run_recovery.hpp"

#include <caf/send.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace allox::session_facets {

namespace {

/// Follows one adopted run: waits until its cgroup is empty, then reports
/// the status our init recorded (none if its init was killed). It blocks
/// its detached thread for the run's life, as a run worker does; the
/// session's end kills the cgroup, and so ends this too.
caf::behavior follow_run(caf::event_based_actor* self, session_actor session,
                         std::string run_id, std::string group, std::string dir,
                         std::shared_ptr<os::release_signal> release) {
  self->quit();
  while (!os::wait_empty(group, 1000))
    if (release->raised())
      return {};
  caf::anon_send(session,
                 run_finished{std::move(run_id), store::read_exit_status(dir),
                              true, caf::none});
  return {};
}

} // namespace

void adopt_runs(self_ptr self, std::vector<run_row> rows) {
  auto& st = self->state;
  if (!st.runs.config)
    return;
  for (auto& row : rows) {
    auto id = row.run_id;
    log::info("session", st.key() + ": adopts run " + id);
    auto& run = st.runs.runs[id];
    run.row = std::move(row);
    run.adopted = true;
    st.runs.active.insert(id);
    st.leases["run:" + id] = os::now_ns();
    self->spawn<caf::detached>(follow_run, caf::actor_cast<session_actor>(self),
                               id, run.row.cgroup, run.row.audit_directory,
                               st.runs.release);
  }
}

bool leaving_runs(self_ptr self) {
  const auto& cfg = self->state.runs.config;
  return cfg && cfg->live_restore && cfg->leaving->load();
}

void leave_runs(self_ptr self) {
  auto& st = self->state;
  for (const auto& id : st.runs.active)
    log::info("session",
              st.key() + ": leaves run " + id + " running for the next daemon");
  st.runs.release->raise();
}

caf::optional<std::string> adopted_end_error(const run_state& run,
                                             const run_finished& e) {
  if (!run.adopted || e.exit_code || e.error || run.row.stop_reason)
    return e.error;
  return std::string{"the run's init was killed while the daemon was away; "
                     "no exit status was recorded"};
}

} // namespace allox::session_facets
