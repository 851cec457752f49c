// The run worker of the SESSION actor's runs facet: the detached thread
// that starts and waits for one run, the row of a new run, and the queue
// that writes run rows to their state.json one at a time.
#include "actors/session/facets.hpp"
#include "guest/log.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "guest/sandbox/spawn.hpp"
#include "guest/store/run_recovery.hpp"

#include <caf/send.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

namespace allox::session_facets {

// -- run rows and the run worker ----------------------------------------------

std::string run_dir(const exec_config& cfg, const std::string& id) {
  return cfg.audit_root + "/" + id;
}

/// Writes the next queued run row (temp file + rename) on a worker thread.
static void save_next_run(self_ptr self) {
  auto& runs = self->state.runs;
  if (runs.unsaved.empty()) {
    runs.saving = false;
    return;
  }
  runs.saving = true;
  auto it = runs.unsaved.begin();
  auto dir = run_dir(*runs.config, it->first);
  auto [row, stamp] = std::move(it->second);
  runs.unsaved.erase(it);
  run_blocking(self,
               [dir, row = std::move(row), stamp = stamp,
                writer = runs.writer]() -> expected<json::value> {
                 if (auto err = writer->write(dir, row, stamp))
                   return err;
                 return json::value();
               })
      .then([self](json::value&) { save_next_run(self); },
            [self](caf::error& err) {
              log::warn("session", "run state not saved: " + message_of(err));
              save_next_run(self);
            });
}

/// Queues a run row for writing to its state.json.
void persist_run(self_ptr self, const json::object& row) {
  auto& runs = self->state.runs;
  runs.unsaved[std::string{row.at("run_id").as_string()}] = {
      row, runs.writer->stamp()};
  if (!runs.saving)
    save_next_run(self);
}

/// The thread of one run: opens its logs, starts bwrap inside the session
/// cgroup, waits for the whole tree and reports. Bubblewrap dies with the
/// thread that started it (--die-with-parent), so this detached actor's
/// thread lives exactly as long as the run.
void run_worker(caf::event_based_actor* self, session_actor session,
                std::string id, std::vector<std::string> argv,
                std::string group, std::string dir, std::string initial,
                std::vector<std::pair<std::string, std::string>> limits,
                std::string tree_root) {
  // A run that never started reports no exit code, and an error.
  auto fail = [&](bool empty, std::string error) {
    caf::anon_send(session,
                   run_finished{id, caf::none, empty, std::move(error)});
  };
  self->quit();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return fail(true, "cannot create the run directory " + dir);
  // The record exists before anything runs: after a crash from here on,
  // start-up finds the run and fences its session.
  if (store::write_run_row(dir, json::parse(initial).as_object()))
    return fail(true, "cannot record the run in " + dir);
  os::unique_fd out{::open((dir + "/stdout.log").c_str(),
                           O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)};
  os::unique_fd err{::open((dir + "/stderr.log").c_str(),
                           O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)};
  if (!out || !err)
    return fail(true, "cannot open the run's logs");
  if (auto e = os::prepare_group(group))
    return fail(!os::populated(group), message_of(e));
  for (const auto& [file, value] : limits) {
    os::enable_controller(tree_root, group, file.substr(0, file.find('.')));
    if (auto e = os::write_control(group, file, value))
      return fail(true, "cannot set " + file + ": " + message_of(e));
  }
  auto gfd = os::open_group(group);
  if (!gfd)
    return fail(true, message_of(gfd.error()));
  auto child = sandbox::spawn_in_cgroup(gfd->get(), argv, out.get(), err.get());
  if (!child)
    return fail(!os::populated(group), message_of(child.error()));
  caf::anon_send(session, run_started{id, int64_t{child->pid}});
  auto code = sandbox::wait_child(*child);
  // Our init outlives every process of the run, so the group empties right
  // after bwrap; wait for the kernel to say so.
  bool empty = os::wait_empty(group, 10000);
  caf::optional<int64_t> exit_code;
  if (code >= 0)
    exit_code = code;
  caf::anon_send(session, run_finished{id, exit_code, empty, caf::none});
}

json::object new_run_row(self_ptr self, const std::string& id,
                         const std::string& group) {
  auto& st = self->state;
  auto& cfg = *st.runs.config;
  json::object row;
  row["run_id"] = id;
  row["agent_id"] = st.agent_id();
  row["session_id"] = st.session_id();
  row["backend"] = "disabled";
  row["isolation"] = "bubblewrap";
  row["boot_id"] = cfg.boot_id;
  row["state"] = "starting";
  row["created_ns"] = os::now_ns();
  row["event_count"] = 0;
  row["processes"] = json::object{};
  row["audit_directory"] = run_dir(cfg, id);
  row["trace_complete"] = false;
  row["cookie"] = 0;
  row["root_pid"] = nullptr;
  row["cgroup"] = group;
  row["root_exit_code"] = nullptr;
  row["stop_reason"] = nullptr;
  row["session_fenced"] = false;
  row["lifecycle_complete"] = false;
  row["finished_ns"] = nullptr;
  row["error"] = nullptr;
  row["provider_error"] = nullptr;
  return row;
}

} // namespace allox::session_facets
