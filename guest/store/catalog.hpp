// SPDX-License-Identifier: Apache-2.0
// The metadata database: one SQLite file in WAL mode under <root>/.allox/,
// outside every subvolume, so rollback never touches it.
//
// Only the METADATA actor uses a catalog; it is not thread-safe.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"
#include "messages/records.hpp"
#include "messages/results/admin.hpp"

#include <memory>
#include <string>
#include <vector>

struct sqlite3;

namespace allox::store {

class statement_cache;

class catalog {
public:
  /// Opens (creating if needed) and migrates the database at `path`.
  static expected<catalog> open(const std::string& path);

  catalog(catalog&&) noexcept;
  catalog& operator=(catalog&&) noexcept;
  ~catalog();

  /// Current schema version (PRAGMA user_version).
  int schema_version() const;

  /// Every row (agents, sessions, checkpoints, journals) and the runs
  /// start-up recovery needs.
  expected<catalog_snapshot> load();

  /// One agent's rows: its own, its sessions' and their checkpoints', in
  /// load()'s order (restarting its actor).
  expected<catalog_snapshot> load_agent(const std::string& agent_id);

  /// One session's row and checkpoints.
  expected<catalog_snapshot> load_session(const std::string& agent_id,
                                          const std::string& session_id);

  /// Applies all writes in one transaction (all or nothing), durable
  /// (fsynced) unless every write says it need not be.
  caf::error apply(const std::vector<const metadata_write*>& writes);

  /// Pages in the write-ahead log after the last commit (SQLite's count;
  /// it starts over after a complete checkpoint).
  int wal_pages() const { return *wal_pages_; }

  /// Copies the write-ahead log into the database file, syncing both (a
  /// passive checkpoint: it never waits for a reader). Returns the pages it
  /// could not copy: 0 unless another connection still reads an older
  /// state, and then the log cannot start over yet. After a complete one,
  /// the next commit writes the log from its start again. Commits never
  /// checkpoint on their own: METADATA calls this.
  expected<int> checkpoint();

  /// Makes every transaction committed so far to the database at
  /// `path` durable, including those committed unsynced: one fdatasync of
  /// its write-ahead log, through a descriptor of its own. Safe from any
  /// thread while the catalog commits on (whatever a checkpoint moved out
  /// of the log, it synced in the database file first).
  static caf::error sync_log(const std::string& path);

  /// One run, or a page of a session's runs (oldest first).
  expected<run_page> runs(const run_query& q);

  /// One session's checkpoints' write sets.
  expected<write_set_page> write_sets(const session_ref& s);

  /// Audit records matching the query, oldest first:
  /// {events:[...], next_cursor, has_more}.
  expected<audit_page> audit(const audit_query& query);

private:
  catalog() = default;
  caf::error exec(const char* sql);
  caf::error migrate();
  sqlite3* db_ = nullptr;
  /// The writes' statements, prepared once.
  std::unique_ptr<statement_cache> stmts_;
  bool durable_ = true; // synchronous=FULL in force
  /// Set by SQLite's log hook after each commit; on the heap, because the
  /// hook keeps its address while the catalog moves.
  std::unique_ptr<int> wal_pages_;
};

} // namespace allox::store
