// SPDX-License-Identifier: Apache-2.0
#include "guest/store/migrations.hpp"

#include <iterator>

namespace allox::store {

// Each entry moves the schema from version i to i + 1. Never edit a shipped
// entry; append a new one.
const char* const migration_steps[] = {
    R"sql(
    CREATE TABLE agents (
      agent_id   TEXT PRIMARY KEY,
      created_ns INTEGER NOT NULL,
      deleting   INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID;
    CREATE TABLE sessions (
      agent_id   TEXT NOT NULL,
      session_id TEXT NOT NULL,
      created_ns INTEGER NOT NULL,
      deleting   INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (agent_id, session_id)
    ) WITHOUT ROWID;
    CREATE TABLE audit (
      seq          INTEGER PRIMARY KEY AUTOINCREMENT,
      timestamp_ns INTEGER NOT NULL,
      op           TEXT NOT NULL,
      agent_id     TEXT,
      session_id   TEXT,
      fields       TEXT NOT NULL
    );
    CREATE INDEX audit_by_scope ON audit (agent_id, session_id, seq);
    CREATE INDEX audit_by_op ON audit (op, seq);
  )sql",
    // 2: checkpoint DAG, session heads, crash journals.
    R"sql(
    ALTER TABLE sessions ADD COLUMN head TEXT;
    CREATE TABLE checkpoints (
      agent_id      TEXT NOT NULL,
      session_id    TEXT NOT NULL,
      checkpoint_id TEXT NOT NULL,
      created_at_ns INTEGER NOT NULL,
      origin        TEXT NOT NULL,
      message       TEXT,
      pinned        INTEGER NOT NULL,
      metadata      TEXT,
      missing       INTEGER NOT NULL,
      parent_id     TEXT,
      generation    INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (agent_id, session_id, checkpoint_id)
    ) WITHOUT ROWID;
    CREATE TABLE journals (
      agent_id      TEXT NOT NULL,
      session_id    TEXT NOT NULL,
      op            TEXT NOT NULL,
      phase         TEXT NOT NULL,
      checkpoint_id TEXT NOT NULL,
      restore_name  TEXT NOT NULL,
      discard_name  TEXT NOT NULL,
      scrub_runtime INTEGER NOT NULL,
      origin        TEXT NOT NULL,
      payload       TEXT NOT NULL,
      PRIMARY KEY (agent_id, session_id)
    ) WITHOUT ROWID;
  )sql",
    // 3: facts about the store itself (one-time imports).
    R"sql(
    CREATE TABLE meta (
      key   TEXT PRIMARY KEY,
      value TEXT NOT NULL
    ) WITHOUT ROWID;
  )sql",
    // 4: checkpoints committed while their snapshot is being taken.
    R"sql(
    ALTER TABLE checkpoints ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;
  )sql",
    // 5: per-session execution settings (session.configure).
    R"sql(
    ALTER TABLE sessions ADD COLUMN exec_settings TEXT;
  )sql",
    // 6: creations in flight are recorded next to their snapshot instead
    // (guest/store/create_intent.hpp); a row is only written once complete.
    R"sql(
    ALTER TABLE checkpoints DROP COLUMN pending;
  )sql",
    // 7: runs, once state.json files in the runs directory.
    R"sql(
    CREATE TABLE runs (
      run_id     TEXT PRIMARY KEY,
      agent_id   TEXT NOT NULL,
      session_id TEXT NOT NULL,
      created_ns INTEGER NOT NULL,
      state      TEXT NOT NULL,
      fences     INTEGER NOT NULL,
      row        TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX runs_by_session
      ON runs (agent_id, session_id, created_ns, run_id);
    CREATE INDEX runs_at_start ON runs (state, fences)
      WHERE fences = 1 OR state IN ('starting', 'running');
  )sql",
    // 8: turn lifecycle state per session; checkpoint policies per agent
    // and per session (JSON text, NULL when nothing is set).
    R"sql(
    ALTER TABLE sessions ADD COLUMN turn_state TEXT;
    ALTER TABLE sessions ADD COLUMN policy TEXT;
    ALTER TABLE agents ADD COLUMN policy TEXT;
  )sql",
    // 9: share.* policy per session (JSON text, NULL before share.enable).
    R"sql(
    ALTER TABLE sessions ADD COLUMN share_policy TEXT;
  )sql",
    // 10: what the front that made a session keeps of it (the E2B front's
    // sandbox record: JSON text, NULL for sessions of the native wire).
    R"sql(
    ALTER TABLE sessions ADD COLUMN front_record TEXT;
  )sql",
    // 11: what each checkpoint's interval changed and who did it (write
    // provenance; body: the session's JSON text of the interval).
    R"sql(
    CREATE TABLE write_sets (
      agent_id      TEXT NOT NULL,
      session_id    TEXT NOT NULL,
      checkpoint_id TEXT NOT NULL,
      body          TEXT NOT NULL,
      PRIMARY KEY (agent_id, session_id, checkpoint_id)
    ) WITHOUT ROWID;
  )sql",
};

const size_t migration_count = std::size(migration_steps);

} // namespace allox::store
