// Runs after a daemon restart (prototype 9.6): a run that was starting or
// running when the daemon died is rewritten as `interrupted` and fences
// its session until an administrator calls session.unfence.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace allox::store {

/// (agent, session) -> runs that fence it.
using fenced_runs =
    std::map<std::pair<std::string, std::string>, std::vector<std::string>>;

/// Rewrites interrupted runs under `audit_root` and returns every run that
/// still fences its session (also those interrupted before).
expected<fenced_runs> recover_runs(const std::string& audit_root);

/// Reads <dir>/state.json (not_found when missing).
expected<json::object> read_run_row(const std::string& dir);

/// Replaces <dir>/state.json (temp file + rename).
caf::error write_run_row(const std::string& dir, const json::object& row);

/// Clears the fence flag of a run (after session.unfence).
caf::error release_run(const std::string& audit_root, const std::string& id);

} // namespace allox::store
