// Runs after a daemon restart (prototype 9.6): a run that was starting or
// running when the daemon died is rewritten as `interrupted` and fences
// its session until an administrator calls session.unfence.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
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

/// Writes the run rows of one session. Its saves run on worker threads one
/// at a time, but the write at shutdown can overtake a save still in
/// flight; both sharing one temp file used to leave a torn state.json.
/// The writer serialises them and keeps the newest row of each run.
class run_row_writer {
public:
  /// Stamps a row about to be queued or written: later stamps are newer.
  uint64_t stamp() { return ++last_stamp_; }

  /// Replaces <dir>/state.json with `row` (temp file + rename), unless a
  /// row with a later stamp has already been written there.
  caf::error write(const std::string& dir, const json::object& row,
                   uint64_t stamp);

private:
  std::atomic<uint64_t> last_stamp_{0};
  std::mutex mtx_;
  std::map<std::string, uint64_t> written_;
};

/// Clears the fence flag of a run (after session.unfence).
caf::error release_run(const std::string& audit_root, const std::string& id);

} // namespace allox::store
