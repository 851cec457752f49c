// SPDX-License-Identifier: Apache-2.0
// The run worker of the SESSION actor's runs facet: the detached thread
// that prepares, starts and waits for one run; the row of a new run; and
// run rows written to the catalog.
#include "actors/session/handlers.hpp"
#include "guest/log.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "guest/os/ownership.hpp"
#include "guest/sandbox/spawn.hpp"
#include "guest/sandbox/stdio.hpp"
#include "guest/store/run_output.hpp"
#include "guest/store/run_recovery.hpp"

#include <caf/send.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace allox::session_facets {

// -- run rows -----------------------------------------------------------------

std::string run_dir(self_ptr self, const std::string& id) {
  auto& st = self->state;
  return store::session_output_dir(st.runs.config->audit_root, st.agent_id(),
                                   st.session_id()) +
         "/" + id;
}

std::string logs_of(const exec_config& cfg, const run_row& row) {
  return row.audit_directory.empty() ? cfg.audit_root + "/" + row.run_id
                                     : row.audit_directory;
}

void persist_run(self_ptr self, const run_row& row,
                 caf::optional<audit_event> record) {
  // Transitions after `starting` need no fsync: start-up recovery treats
  // a run whose later rows were lost as interrupted, which fences its
  // session, the safe side. The METADATA actor commits them in batches.
  metadata_write w;
  w.durable = false;
  w.put_runs.push_back(store::record_of(row));
  if (record)
    w.audit.push_back(std::move(*record));
  auto key = self->state.key();
  self->request(self->state.init.metadata, caf::infinite, atom::write_v,
                std::move(w))
      .then([](caf::ok_atom) {},
            [key](caf::error& err) {
              log::warn("session",
                        key + ": run row not saved: " + message_of(err));
            });
}

run_row new_run_row(self_ptr self, const std::string& id,
                    const std::string& group) {
  auto& st = self->state;
  auto& cfg = *st.runs.config;
  run_row row;
  row.run_id = id;
  row.agent_id = st.agent_id();
  row.session_id = st.session_id();
  row.boot_id = cfg.boot_id;
  row.created_ns = os::now_ns();
  row.audit_directory = run_dir(self, id);
  row.cgroup = group;
  return row;
}

// -- the run worker -----------------------------------------------------------

namespace {

/// What a prepared run holds until it is told to start.
struct prepared_run {
  os::unique_fd out;
  os::unique_fd err;
  /// The `exit` file our init writes the final status to.
  os::unique_fd status;
  os::unique_fd group_fd;
};

/// Creates the run's directory and its three files; errno on failure.
int make_logs(const run_launch& job, prepared_run& p) {
  if (::mkdir(job.dir.c_str(), 0700) != 0 && errno != EEXIST)
    return errno;
  auto open_log = [](const std::string& path, int flags) {
    return os::unique_fd{
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0600)};
  };
  p.out = open_log(job.dir + "/stdout.log", O_APPEND);
  p.err = open_log(job.dir + "/stderr.log", O_APPEND);
  p.status = open_log(store::exit_status_path(job.dir), O_TRUNC);
  return p.out && p.err && p.status ? 0 : errno;
}

/// Creates the run's directory, logs and cgroup (with its limits); an
/// error names what failed.
expected<prepared_run> prepare(const run_launch& job) {
  auto session_logs = job.dir.substr(0, job.dir.rfind('/'));
  if (auto err = store::ensure_output_dir(session_logs, job.output_subvolume))
    return make_error(errc::internal, "cannot create the session's run logs: " +
                                          message_of(err));
  // The session's logs are full, or nearly (as of the last commit): its
  // finished runs' logs make room.
  auto reclaim = [&job, &session_logs] {
    auto removed =
        store::reclaim_output(session_logs, job.live_runs, job.output_room);
    if (removed && *removed > 0)
      log::info("session", "run " + job.run_id + ": removed the logs of " +
                               std::to_string(*removed) +
                               " finished runs to make room");
    return removed && *removed > 0;
  };
  if (job.output_room > 0 &&
      store::output_room(session_logs) < job.output_room / 2)
    reclaim();
  prepared_run p;
  int failed = make_logs(job, p);
  auto full = [&failed] {
    return failed == EDQUOT || failed == ENOSPC;
  };
  if (full() && job.output_room > 0 && reclaim())
    failed = make_logs(job, p);
  if (failed != 0)
    return make_error(full() ? errc::no_space : errc::internal,
                      "cannot create the run's logs in " + job.dir + ": " +
                          std::strerror(failed));
  if (auto e = os::prepare_group(job.group))
    return e;
  for (const auto& [file, value] : job.limits) {
    os::enable_controller(job.tree_root, job.limits_group,
                          file.substr(0, file.find('.')));
    if (auto e = os::write_control(job.limits_group, file, value))
      return make_error(errc::internal,
                        "cannot set " + file + ": " + message_of(e));
  }
  auto gfd = os::open_group(job.group);
  if (!gfd)
    return gfd.error();
  p.group_fd = std::move(*gfd);
  // One stat each when the trees are the run user's already (always,
  // except the first run of a store written by root runs or after a
  // rollback to a checkpoint from then).
  for (const auto& tree : job.owned_trees)
    if (!os::owned_by(tree, job.uid, job.gid))
      if (auto e = os::hand_over(tree, job.uid, job.gid))
        return make_error(errc::internal,
                          "cannot hand " + tree +
                              " to the sandbox user: " + message_of(e));
  return p;
}

} // namespace

// Prepares while the session commits the run's `starting` row, so the
// commit and the preparation overlap; spawns only once told to (the row
// is then durable: after a crash from here on, start-up finds the run and
// is adopted by the next daemon, or fences its session). This detached
// actor's thread waits for bubblewrap and the run's cgroup: it lives
// exactly as long as the run (or the daemon).
caf::behavior run_worker(caf::event_based_actor* self, session_actor session,
                         run_launch job) {
  auto report_failure = [session, id = job.run_id](bool empty,
                                                   std::string error) {
    caf::anon_send(session,
                   run_finished{id, caf::none, empty, std::move(error)});
  };
  auto prepared = prepare(job);
  if (!prepared) {
    report_failure(!os::populated(job.group), message_of(prepared.error()));
    self->quit();
    return {};
  }
  auto run = std::make_shared<prepared_run>(std::move(*prepared));
  // A session that ends before telling us ends the run too.
  self->monitor(session);
  self->set_down_handler([self, group = job.group](caf::down_msg&) {
    os::remove_group(group);
    self->quit();
  });
  // The spawn waits for the row's commit (atom::run) and, for a tracked
  // run, for the TRACKER to attribute the run's cgroup to its cookie: the
  // kernel must know the cgroup before the run's first process exists.
  auto gates = std::make_shared<int>(job.tracker ? 2 : 1);
  auto launch = [self, session, job, run] {
    self->quit();
    int in = job.stdin_fd ? job.stdin_fd->get() : -1;
    // A terminal is the run's stdin, stdout and stderr; its output
    // reaches the stdout log through the pump.
    int out = job.terminal ? in : run->out.get();
    int err = job.terminal ? in : run->err.get();
    // The count is the group's since it was made (the session's group
    // serves one run after another): the run's own kills are the change,
    // read before the spawn so a run killed at once is counted too.
    auto kills_before = os::oom_kills(job.group);
    auto child = sandbox::spawn_in_cgroup(
        run->group_fd.get(), job.argv, in, out, err,
        job.netns ? job.netns->get() : -1, run->status.get());
    run->status.reset();
    // Only the run holds its end now: the pipe's reader sees the end
    // of input and the terminal's master the hang-up once it is gone.
    if (job.stdin_fd)
      job.stdin_fd->reset();
    std::thread pump;
    if (job.terminal && child)
      pump = std::thread{[master = job.terminal, log = run] {
        sandbox::pump_terminal(master->get(), log->out.get());
      }};
    auto finish_pump = [&pump, run] {
      if (pump.joinable())
        pump.join();
      run->out.reset();
      run->err.reset();
    };
    if (!child) {
      finish_pump();
      caf::anon_send(session, run_finished{job.run_id, caf::none,
                                           !os::populated(job.group),
                                           message_of(child.error())});
      return;
    }
    caf::anon_send(session, run_started{job.run_id, int64_t{child->pid}});
    auto code = sandbox::wait_child(*child, job.release->fd());
    if (code == sandbox::released) {
      // Left to the next daemon (--live-restore): a terminal's pump ends
      // with this process.
      if (pump.joinable())
        pump.detach();
      return;
    }
    // Our init outlives every process of the run, so the group empties
    // right after bwrap; wait for the kernel to say so.
    bool empty = os::wait_empty(job.group, 10000);
    finish_pump();
    caf::optional<int64_t> exit_code;
    if (code >= 0)
      exit_code = code;
    int64_t kills = 0;
    if (auto after = os::oom_kills(job.group); after && kills_before)
      kills = *after - *kills_before;
    caf::anon_send(
        session, run_finished{job.run_id, exit_code, empty, caf::none, kills});
  };
  if (job.tracker) {
    self->request(job.tracker, std::chrono::seconds{10}, atom::track_v,
                  job.group, job.cookie,
                  caf::actor_cast<session_tracking_actor>(session))
        .then(
            [gates, launch](caf::ok_atom) {
              if (--*gates == 0)
                launch();
            },
            [self, session, job](caf::error& err) {
              os::remove_group(job.group);
              caf::anon_send(session, run_finished{job.run_id, caf::none, true,
                                                   "cannot track the run: " +
                                                       message_of(err)});
              self->quit();
            });
  }
  return {
      [gates, launch](atom::run) {
        if (--*gates == 0)
          launch();
      },
      [self, group = job.group](atom::retire) {
        // The run was refused after all (its row could not be recorded).
        os::remove_group(group);
        self->quit();
      },
  };
}

} // namespace allox::session_facets
