// SPDX-License-Identifier: Apache-2.0
// Runs after a daemon restart (prototype 9.6): a run that was starting or
// running when the daemon died is rewritten as `interrupted` and fences
// its session until an administrator calls session.unfence. Run rows live
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

/// The catalog record of a run row (process.get's result).
run_record record_of(const run_row& row);

/// The catalog record of a row of an earlier version, as it was written
/// (state.json files, imported once).
run_record record_of(const json::object& row);

/// Start-up recovery of runs, written into `changes` (committed with the
/// rest of start-up recovery in one transaction): imports state.json rows
/// under `audit_root` unless `snap` says that was done, rewrites runs a
/// crash interrupted, and returns every run that fences its session.
expected<fenced_runs> recover_runs(const catalog_snapshot& snap,
                                   const std::string& audit_root,
                                   metadata_write& changes);

/// Reads <dir>/state.json (not_found when missing).
expected<json::object> read_run_row(const std::string& dir);

} // namespace allox::store
