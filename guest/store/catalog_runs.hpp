// SPDX-License-Identifier: Apache-2.0
// The runs table of the catalog: one row per run, written through the
// METADATA actor like every other row. Internal to guest/store/ (the
// catalog); the rest of the daemon sees run_record, run_query and run_page.
#pragma once

#include "messages/errors.hpp"
#include "messages/records.hpp"

#include <memory>
#include <string>
#include <vector>

struct sqlite3;

namespace allox::store {

class statement_cache;

/// The statements that write runs inside one catalog transaction.
class run_writer_statements {
public:
  explicit run_writer_statements(statement_cache& cache);
  ~run_writer_statements();

  /// False when a statement could not be prepared.
  bool ok() const;

  /// Inserts or replaces one run.
  caf::error put(const run_record& r);

  /// Marks a run as no longer fencing its session, in its row too.
  caf::error release(const std::string& run_id);

  /// Forgets the runs of a deleted session.
  caf::error delete_session(const std::string& agent_id,
                            const std::string& session_id);

  /// Forgets the runs of a deleted agent.
  caf::error delete_agent(const std::string& agent_id);

  /// Notes that state.json rows were imported.
  caf::error mark_imported();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// The runs start-up needs: those still starting or running (interrupted
/// by a crash) and those that fence their session. O(those), not O(all).
caf::error load_start_runs(sqlite3* db, catalog_snapshot& snap);

/// Answers a run_query: one run by id, or a page of a session's runs.
expected<run_page> query_runs(sqlite3* db, const run_query& q);

} // namespace allox::store
