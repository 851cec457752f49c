// SPDX-License-Identifier: Apache-2.0
#include "guest/store/run_recovery.hpp"

#include "guest/log.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "messages/results/runs_json.hpp"

#include <fstream>
#include <sstream>

namespace allox::store {

namespace {

std::string string_field(const json::object& row, const char* key) {
  auto* v = row.if_contains(key);
  return v && v->is_string() ? std::string{v->get_string()} : std::string{};
}

bool is_live(const std::string& state) {
  auto phase = parse_run_phase(state);
  return phase && !is_final(*phase);
}

/// The rows saved by earlier versions as state.json files.
std::vector<run_record> import_state_files(const std::string& audit_root) {
  std::vector<run_record> out;
  auto names = os::list_dir(audit_root);
  if (!names)
    return out;
  for (const auto& id : *names) {
    auto row = read_run_row(audit_root + "/" + id);
    if (!row) {
      if (code_of(row.error()) != errc::not_found)
        log::warn("runs",
                  message_of(row.error()) + "; run " + id + " is not imported");
      continue;
    }
    auto rec = record_of(*row);
    if (rec.run_id.empty() || rec.agent_id.empty() || rec.session_id.empty()) {
      log::warn("runs", "run " + id + " has no ids; not imported");
      continue;
    }
    out.push_back(std::move(rec));
  }
  return out;
}

/// Rewrites a run a crash interrupted: it fences its session.
/// An unreadable row keeps the record's ids, and is interrupted all the
/// same: what it fences matters more than what it said.
void interrupt(run_record& rec) {
  auto decoded = run_row_from_text(rec.row);
  if (!decoded)
    log::warn("runs", "run " + rec.run_id + ": " + message_of(decoded.error()) +
                          "; its row is rewritten from its ids");
  run_row row = decoded ? std::move(*decoded) : run_row{};
  if (!decoded) {
    row.run_id = rec.run_id;
    row.agent_id = rec.agent_id;
    row.session_id = rec.session_id;
    row.created_ns = rec.created_ns;
  }
  row.state = run_phase::interrupted;
  row.session_fenced = true;
  row.trace_complete = false;
  row.lifecycle_complete = false;
  row.processes.forget_liveness();
  rec = record_of(row);
}

/// The row of a live run this daemon can follow to its end: started in
/// this boot, and either still running in its cgroup or ended with a
/// status its init recorded. None for any other.
caf::optional<run_row> adoptable(const run_record& rec,
                                 const std::string& boot_id) {
  auto row = run_row_from_text(rec.row);
  if (!row || boot_id.empty() || row->boot_id != boot_id)
    return caf::none;
  bool alive = !row->cgroup.empty() && os::populated(row->cgroup);
  if (!alive && !read_exit_status(row->audit_directory))
    return caf::none;
  // Its `running` row may have been lost (it is committed unsynced).
  row->state = run_phase::running;
  // Nobody saw its processes while the daemon was away.
  row->processes.forget_liveness();
  row->trace_complete = false;
  return std::move(*row);
}

} // namespace

std::string exit_status_path(const std::string& run_dir) {
  return run_dir + "/exit";
}

caf::optional<int64_t> read_exit_status(const std::string& run_dir) {
  if (run_dir.empty())
    return caf::none;
  std::ifstream in{exit_status_path(run_dir)};
  int64_t code = 0;
  if (!(in >> code) || code < 0 || code > 255)
    return caf::none;
  return code;
}

run_record record_of(const run_row& row) {
  run_record r;
  r.run_id = row.run_id;
  r.agent_id = row.agent_id;
  r.session_id = row.session_id;
  r.created_ns = row.created_ns;
  r.state = std::string{to_string(row.state)};
  r.fences = row.session_fenced;
  r.row = json::serialize(to_json(row));
  return r;
}

run_record record_of(const json::object& row) {
  run_record r;
  r.run_id = string_field(row, "run_id");
  r.agent_id = string_field(row, "agent_id");
  r.session_id = string_field(row, "session_id");
  if (auto* c = row.if_contains("created_ns"); c && c->is_int64())
    r.created_ns = c->as_int64();
  r.state = string_field(row, "state");
  auto* fenced = row.if_contains("session_fenced");
  r.fences = fenced && fenced->is_bool() && fenced->as_bool();
  r.row = json::serialize(row);
  return r;
}

expected<recovered_runs> recover_runs(const catalog_snapshot& snap,
                                      const std::string& audit_root,
                                      const std::string& boot_id,
                                      metadata_write& changes) {
  std::vector<run_record> candidates = snap.runs;
  if (!snap.runs_imported) {
    auto imported = import_state_files(audit_root);
    if (!imported.empty())
      log::info("runs", "importing " + std::to_string(imported.size()) +
                            " run rows from " + audit_root);
    for (auto& rec : imported) {
      if (is_live(rec.state) || rec.fences)
        candidates.push_back(rec);
      else
        changes.put_runs.push_back(std::move(rec));
    }
    changes.mark_runs_imported = true;
  }
  recovered_runs out;
  for (auto& rec : candidates) {
    bool changed = !snap.runs_imported;
    if (is_live(rec.state) && !rec.fences) {
      if (auto row = adoptable(rec, boot_id)) {
        log::info("runs", "run " + rec.run_id +
                              " outlived the daemon; its session adopts it");
        auto rewritten = record_of(*row);
        out.adopted[{rec.agent_id, rec.session_id}].push_back(std::move(*row));
        changes.put_runs.push_back(std::move(rewritten));
        continue;
      }
    }
    if (is_live(rec.state)) {
      interrupt(rec);
      changed = true;
      log::warn("runs", "run " + rec.run_id +
                            " was interrupted by a daemon restart; "
                            "its session stays fenced until session.unfence");
    }
    if (rec.fences)
      out.fenced[{rec.agent_id, rec.session_id}].push_back(rec.run_id);
    if (changed)
      changes.put_runs.push_back(std::move(rec));
  }
  return out;
}

expected<json::object> read_run_row(const std::string& dir) {
  auto path = dir + "/state.json";
  std::ifstream in{path};
  if (!in)
    return make_error(errc::not_found, "unknown run");
  std::stringstream ss;
  ss << in.rdbuf();
  boost::system::error_code ec;
  auto v = json::parse(ss.str(), ec);
  if (ec || !v.is_object())
    return make_error(errc::internal, "unreadable run state " + path);
  return std::move(v.as_object());
}

} // namespace allox::store
