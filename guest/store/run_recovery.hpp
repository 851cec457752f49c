// SPDX-License-Identifier: Apache-2.0
// Runs after a daemon restart. A run that was starting or running when the
// daemon died goes on without it (bubblewrap does not die with the
// daemon): if it still runs in its cgroup, or its init left its final
// status in the run's `exit` file, it is adopted by its session, which
// follows it to its end. Only a run that left neither (killed with its
// init, or from another boot) is rewritten as `interrupted` and fences its
// session until an administrator calls session.unfence (prototype 9.6).
// Run rows live
// in the catalog (the runs table); stores written before that kept them
// as <runs>/<run>/state.json, imported here once.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"
#include "messages/records.hpp"
#include "messages/results/runs.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace allox::store {

/// (agent, session) -> runs that fence it.
using fenced_runs =
    std::map<std::pair<std::string, std::string>, std::vector<std::string>>;

/// (agent, session) -> the rows of its runs to adopt.
using adopted_runs =
    std::map<std::pair<std::string, std::string>, std::vector<run_row>>;

/// What start-up recovery found among the runs.
struct recovered_runs {
  fenced_runs fenced;
  adopted_runs adopted;
};

/// The file our init writes a run's final status to, in its directory.
std::string exit_status_path(const std::string& run_dir);

/// The final status our init recorded for the run (none: not recorded,
/// the run is still alive or its init was killed).
caf::optional<int64_t> read_exit_status(const std::string& run_dir);

/// The catalog record of a run row (process.get's result).
run_record record_of(const run_row& row);

/// The catalog record of a row of an earlier version, as it was written
/// (state.json files, imported once).
run_record record_of(const json::object& row);

/// Start-up recovery of runs, written into `changes` (committed with the
/// rest of start-up recovery in one transaction): imports state.json rows
/// under `audit_root` unless `snap` says that was done, returns the live
/// runs of this boot (`boot_id`) to adopt, rewrites the others as
/// interrupted, and returns every run that fences its session.
expected<recovered_runs> recover_runs(const catalog_snapshot& snap,
                                      const std::string& audit_root,
                                      const std::string& boot_id,
                                      metadata_write& changes);

/// Reads <dir>/state.json (not_found when missing).
expected<json::object> read_run_row(const std::string& dir);

} // namespace allox::store
