// SPDX-License-Identifier: Apache-2.0
#include "guest/store/catalog.hpp"

#include "guest/os/unique_fd.hpp"
#include "guest/store/catalog_runs.hpp"
#include "guest/store/catalog_writes.hpp"
#include "guest/store/migrations.hpp"
#include "guest/store/sqlite_statement.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>

#include <utility>

namespace allox::store {

namespace {

int count_wal_pages(void* pages, sqlite3*, const char*, int n) {
  *static_cast<int*>(pages) = n;
  return SQLITE_OK;
}

} // namespace

expected<catalog> catalog::open(const std::string& path) {
  catalog result;
  int rc = sqlite3_open_v2(path.c_str(), &result.db_,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                               SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    auto err = make_error(errc::internal, "cannot open metadata database " +
                                              path + ": " + sqlite3_errstr(rc));
    return err;
  }
  sqlite3_busy_timeout(result.db_, 5000);
  // WAL keeps readers off the writer's path; synchronous=FULL makes every
  // commit durable before the filesystem step it guards (journals).
  if (auto err = result.exec("PRAGMA journal_mode=WAL;"
                             "PRAGMA synchronous=FULL;"))
    return err;
  // No checkpoint inside a commit. SQLite's automatic one runs in the
  // commit that takes the log past 1,000 pages: two syncs of 20 to 30 ms
  // on the way of whoever waits for that commit (docs/benchmarks.md,
  // "Turns"). This hook replaces it and only counts; METADATA checkpoints
  // once the catalog is idle, or when the log reaches its bound.
  result.wal_pages_ = std::make_unique<int>(0);
  sqlite3_wal_hook(result.db_, count_wal_pages, result.wal_pages_.get());
  if (auto err = result.migrate())
    return err;
  result.stmts_ = std::make_unique<statement_cache>(result.db_);
  return result;
}

catalog::catalog(catalog&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), stmts_(std::move(other.stmts_)),
      durable_(other.durable_), wal_pages_(std::move(other.wal_pages_)) {}

catalog& catalog::operator=(catalog&& other) noexcept {
  if (this != &other) {
    stmts_.reset();
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    stmts_ = std::move(other.stmts_);
    durable_ = other.durable_;
    wal_pages_ = std::move(other.wal_pages_);
  }
  return *this;
}

catalog::~catalog() {
  stmts_.reset(); // its statements first: then the connection closes at once
  sqlite3_close_v2(db_);
}

caf::error catalog::exec(const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string text = msg ? msg : "unknown error";
    sqlite3_free(msg);
    return make_error(errc::internal, "metadata database: " + text);
  }
  return caf::none;
}

expected<int> catalog::checkpoint() {
  int logged = 0;
  int copied = 0;
  if (sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE,
                                &logged, &copied) != SQLITE_OK)
    return db_error(db_, "checkpoint of the write-ahead log");
  if (copied == logged)
    *wal_pages_ = 0;
  return logged - copied;
}

caf::error catalog::sync_log(const std::string& path) {
  auto log = path + "-wal";
  os::unique_fd fd{::open(log.c_str(), O_RDONLY | O_CLOEXEC)};
  // No log: the last connection closed, after copying it into the
  // database file and syncing that.
  if (!fd)
    return errno == ENOENT ? caf::none : sys_error("open " + log);
  if (::fdatasync(fd.get()) != 0)
    return sys_error("sync " + log);
  return caf::none;
}

int catalog::schema_version() const {
  statement st{db_, "PRAGMA user_version"};
  if (!st || st.step() != SQLITE_ROW)
    return -1;
  return static_cast<int>(st.integer(0));
}

caf::error catalog::migrate() {
  const int latest = static_cast<int>(migration_count);
  int version = schema_version();
  if (version > latest)
    return make_error(errc::internal,
                      "metadata database schema version " +
                          std::to_string(version) +
                          " is newer than this daemon supports (" +
                          std::to_string(latest) + ")");
  for (; version < latest; ++version) {
    if (auto err = exec("BEGIN IMMEDIATE"))
      return err;
    if (auto err = exec(migration_steps[version])) {
      exec("ROLLBACK");
      return err;
    }
    auto set = "PRAGMA user_version=" + std::to_string(version + 1);
    if (auto err = exec(set.c_str())) {
      exec("ROLLBACK");
      return err;
    }
    if (auto err = exec("COMMIT"))
      return err;
  }
  return caf::none;
}

namespace {

/// Reads the agent, session and checkpoint rows into `snap`, every one or
/// (with `agent`) one agent's, in the same order either way.
caf::error load_rows(sqlite3* db, const std::string* agent,
                     catalog_snapshot& snap) {
  std::string where = agent != nullptr ? " WHERE agent_id = ?1" : "";
  // Binds the agent to the statement's ?1 (nothing to bind for every row).
  auto ready = [agent](statement& st) {
    if (st && agent != nullptr)
      st.bind(1, *agent);
    return static_cast<bool>(st);
  };
  auto sql = "SELECT agent_id, created_ns, deleting, policy FROM agents" +
             where + " ORDER BY agent_id";
  statement agents{db, sql.c_str()};
  if (!ready(agents))
    return db_error(db, "load agents");
  while (agents.step() == SQLITE_ROW)
    snap.agents.push_back({agents.text(0), agents.integer(1),
                           agents.integer(2) != 0, agents.nullable_text(3)});
  sql = "SELECT agent_id, session_id, created_ns, deleting, head, "
        "exec_settings, turn_state, policy, share_policy, front_record FROM "
        "sessions" +
        where + " ORDER BY agent_id, session_id";
  statement sessions{db, sql.c_str()};
  if (!ready(sessions))
    return db_error(db, "load sessions");
  while (sessions.step() == SQLITE_ROW)
    snap.sessions.push_back(
        {sessions.text(0), sessions.text(1), sessions.integer(2),
         sessions.integer(3) != 0, sessions.nullable_text(4),
         sessions.nullable_text(5), sessions.nullable_text(6),
         sessions.nullable_text(7), sessions.nullable_text(8),
         sessions.nullable_text(9)});
  sql = "SELECT agent_id, session_id, checkpoint_id, created_at_ns, origin, "
        "message, pinned, metadata, missing, parent_id, generation FROM "
        "checkpoints" +
        where + " ORDER BY agent_id, session_id, created_at_ns, checkpoint_id";
  statement checkpoints{db, sql.c_str()};
  if (!ready(checkpoints))
    return db_error(db, "load checkpoints");
  while (checkpoints.step() == SQLITE_ROW) {
    checkpoint_row r;
    r.agent_id = checkpoints.text(0);
    r.session_id = checkpoints.text(1);
    r.checkpoint_id = checkpoints.text(2);
    r.created_at_ns = checkpoints.integer(3);
    r.origin = checkpoints.text(4);
    r.message = checkpoints.nullable_text(5);
    r.pinned = checkpoints.integer(6) != 0;
    r.metadata = checkpoints.nullable_text(7);
    r.missing = checkpoints.integer(8) != 0;
    r.parent_id = checkpoints.nullable_text(9);
    r.generation = checkpoints.integer(10);
    snap.checkpoints.push_back(std::move(r));
  }
  return caf::none;
}

} // namespace

expected<catalog_snapshot> catalog::load() {
  catalog_snapshot snap;
  if (auto err = load_rows(db_, nullptr, snap))
    return err;
  statement imported{db_,
                     "SELECT 1 FROM meta WHERE key = 'prototype_imported'"};
  if (!imported)
    return db_error(db_, "load meta");
  snap.prototype_imported = imported.step() == SQLITE_ROW;
  statement journals{
      db_,
      "SELECT agent_id, session_id, op, phase, checkpoint_id, restore_name, "
      "discard_name, scrub_runtime, origin, payload FROM journals"};
  if (!journals)
    return db_error(db_, "load journals");
  while (journals.step() == SQLITE_ROW)
    snap.journals.push_back(
        {journals.text(0), journals.text(1), journals.text(2), journals.text(3),
         journals.text(4), journals.text(5), journals.text(6),
         journals.integer(7) != 0, journals.text(8), journals.text(9)});
  if (auto err = load_start_runs(db_, snap))
    return err;
  return snap;
}

expected<catalog_snapshot> catalog::load_agent(const std::string& agent_id) {
  catalog_snapshot snap;
  if (auto err = load_rows(db_, &agent_id, snap))
    return err;
  return snap;
}

expected<catalog_snapshot>
catalog::load_session(const std::string& agent_id,
                      const std::string& session_id) {
  auto all = load_agent(agent_id);
  if (!all)
    return all;
  catalog_snapshot one;
  for (auto& s : all->sessions)
    if (s.session_id == session_id)
      one.sessions.push_back(std::move(s));
  for (auto& c : all->checkpoints)
    if (c.session_id == session_id)
      one.checkpoints.push_back(std::move(c));
  return one;
}

caf::error catalog::apply(const std::vector<const metadata_write*>& writes) {
  // One durable write makes the whole batch durable.
  bool durable = false;
  for (const auto* w : writes)
    durable |= w->durable;
  if (durable != durable_) {
    if (auto err = exec(durable ? "PRAGMA synchronous=FULL"
                                : "PRAGMA synchronous=NORMAL"))
      return err;
    durable_ = durable;
  }
  if (auto err = exec("BEGIN IMMEDIATE"))
    return err;
  auto fail = [this](const char* what) {
    auto err = db_error(db_, what);
    exec("ROLLBACK");
    return err;
  };
  statement put_agent{*stmts_,
                      "INSERT INTO agents (agent_id, created_ns, deleting)"
                      " VALUES (?1, ?2, ?3) ON CONFLICT (agent_id) DO "
                      "UPDATE SET deleting = excluded.deleting"};
  statement del_agent_sessions{*stmts_,
                               "DELETE FROM sessions WHERE agent_id = ?1"};
  statement del_agent_checkpoints{
      *stmts_, "DELETE FROM checkpoints WHERE agent_id = ?1"};
  statement del_agent_journals{*stmts_,
                               "DELETE FROM journals WHERE agent_id = ?1"};
  statement del_session_checkpoints{
      *stmts_,
      "DELETE FROM checkpoints WHERE agent_id = ?1 AND session_id = ?2"};
  statement del_session_journal{
      *stmts_, "DELETE FROM journals WHERE agent_id = ?1 AND session_id = ?2"};
  statement put_checkpoint{
      *stmts_,
      "INSERT OR REPLACE INTO checkpoints (agent_id, session_id, "
      "checkpoint_id, created_at_ns, origin, message, pinned, metadata, "
      "missing, parent_id, generation) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
      "?8, ?9, ?10, ?11)"};
  statement del_checkpoint{
      *stmts_,
      "DELETE FROM checkpoints WHERE agent_id = ?1 AND session_id = ?2 "
      "AND checkpoint_id = ?3"};
  statement set_head{
      *stmts_,
      "UPDATE sessions SET head = ?3 WHERE agent_id = ?1 AND session_id = ?2"};
  statement set_settings{
      *stmts_, "UPDATE sessions SET exec_settings = ?3 WHERE agent_id = ?1 AND "
               "session_id = ?2"};
  statement set_turn_state{
      *stmts_, "UPDATE sessions SET turn_state = ?3 WHERE agent_id = ?1 AND "
               "session_id = ?2"};
  statement set_session_policy{
      *stmts_, "UPDATE sessions SET policy = ?3 WHERE agent_id = ?1 AND "
               "session_id = ?2"};
  statement set_agent_policy{
      *stmts_, "UPDATE agents SET policy = ?2 WHERE agent_id = ?1"};
  statement set_share_policy{
      *stmts_, "UPDATE sessions SET share_policy = ?3 WHERE agent_id = ?1 AND "
               "session_id = ?2"};
  statement set_front_record{
      *stmts_, "UPDATE sessions SET front_record = ?3 WHERE agent_id = ?1 AND "
               "session_id = ?2"};
  statement put_journal{
      *stmts_,
      "INSERT OR REPLACE INTO journals (agent_id, session_id, op, phase, "
      "checkpoint_id, restore_name, discard_name, scrub_runtime, origin, "
      "payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"};
  statement del_agent{*stmts_, "DELETE FROM agents WHERE agent_id = ?1"};
  statement put_session{
      *stmts_,
      "INSERT INTO sessions (agent_id, session_id, created_ns, deleting, "
      "head) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (agent_id, session_id) "
      "DO UPDATE SET deleting = excluded.deleting"};
  statement del_session{
      *stmts_, "DELETE FROM sessions WHERE agent_id = ?1 AND session_id = ?2"};
  statement mark_imported{*stmts_,
                          "INSERT OR REPLACE INTO meta (key, value) VALUES "
                          "('prototype_imported', strftime('%s','now'))"};
  statement put_audit{*stmts_,
                      "INSERT INTO audit (timestamp_ns, op, agent_id, "
                      "session_id, fields) VALUES (?1, ?2, ?3, ?4, ?5)"};
  run_writer_statements runs{*stmts_};
  if (!runs.ok())
    return fail("prepare");
  if (!put_agent || !del_agent_sessions || !del_agent || !put_session ||
      !del_session || !put_audit || !del_agent_checkpoints ||
      !del_agent_journals || !del_session_checkpoints || !del_session_journal ||
      !put_checkpoint || !del_checkpoint || !set_head || !put_journal ||
      !mark_imported || !set_settings || !set_turn_state ||
      !set_session_policy || !set_agent_policy || !set_share_policy ||
      !set_front_record)
    return fail("prepare");
  for (const auto* w : writes) {
    if (w->mark_prototype_imported) {
      if (mark_imported.step() != SQLITE_DONE)
        return fail("write meta");
      mark_imported.reset();
    }
    if (w->mark_runs_imported)
      if (auto err = runs.mark_imported()) {
        exec("ROLLBACK");
        return err;
      }
    for (const auto& a : w->put_agents) {
      put_agent.bind(1, a.agent_id);
      put_agent.bind(2, a.created_ns);
      put_agent.bind(3, int64_t{a.deleting});
      if (put_agent.step() != SQLITE_DONE)
        return fail("write agent");
      put_agent.reset();
    }
    for (const auto& s : w->put_sessions) {
      put_session.bind(1, s.agent_id);
      put_session.bind(2, s.session_id);
      put_session.bind(3, s.created_ns);
      put_session.bind(4, int64_t{s.deleting});
      put_session.bind_nullable(5, s.head);
      if (put_session.step() != SQLITE_DONE)
        return fail("write session");
      put_session.reset();
    }
    for (const auto& c : w->put_checkpoints) {
      put_checkpoint.bind(1, c.agent_id);
      put_checkpoint.bind(2, c.session_id);
      put_checkpoint.bind(3, c.checkpoint_id);
      put_checkpoint.bind(4, c.created_at_ns);
      put_checkpoint.bind(5, c.origin);
      put_checkpoint.bind_nullable(6, c.message);
      put_checkpoint.bind(7, int64_t{c.pinned});
      put_checkpoint.bind_nullable(8, c.metadata);
      put_checkpoint.bind(9, int64_t{c.missing});
      put_checkpoint.bind_nullable(10, c.parent_id);
      put_checkpoint.bind(11, c.generation);
      if (put_checkpoint.step() != SQLITE_DONE)
        return fail("write checkpoint");
      put_checkpoint.reset();
    }
    for (const auto& c : w->delete_checkpoints) {
      del_checkpoint.bind(1, c.agent_id);
      del_checkpoint.bind(2, c.session_id);
      del_checkpoint.bind(3, c.checkpoint_id);
      if (del_checkpoint.step() != SQLITE_DONE)
        return fail("delete checkpoint");
      del_checkpoint.reset();
    }
    for (const auto& h : w->set_heads) {
      set_head.bind(1, h.agent_id);
      set_head.bind(2, h.session_id);
      set_head.bind_nullable(3, h.head);
      if (set_head.step() != SQLITE_DONE)
        return fail("write head");
      set_head.reset();
    }
    for (const auto& x : w->set_exec_settings) {
      set_settings.bind(1, x.agent_id);
      set_settings.bind(2, x.session_id);
      set_settings.bind_nullable(3, x.settings);
      if (set_settings.step() != SQLITE_DONE)
        return fail("write session settings");
      set_settings.reset();
    }
    for (const auto& x : w->set_turn_states) {
      set_turn_state.bind(1, x.agent_id);
      set_turn_state.bind(2, x.session_id);
      set_turn_state.bind_nullable(3, x.settings);
      if (set_turn_state.step() != SQLITE_DONE)
        return fail("write turn state");
      set_turn_state.reset();
    }
    for (const auto& x : w->set_policies) {
      auto& st = x.session_id.empty() ? set_agent_policy : set_session_policy;
      int at = 1;
      st.bind(at++, x.agent_id);
      if (!x.session_id.empty())
        st.bind(at++, x.session_id);
      st.bind_nullable(at, x.settings);
      if (st.step() != SQLITE_DONE)
        return fail("write policy");
      st.reset();
    }
    for (const auto& x : w->set_share_policies) {
      set_share_policy.bind(1, x.agent_id);
      set_share_policy.bind(2, x.session_id);
      set_share_policy.bind_nullable(3, x.settings);
      if (set_share_policy.step() != SQLITE_DONE)
        return fail("write share policy");
      set_share_policy.reset();
    }
    for (const auto& x : w->set_front_records) {
      set_front_record.bind(1, x.agent_id);
      set_front_record.bind(2, x.session_id);
      set_front_record.bind_nullable(3, x.settings);
      if (set_front_record.step() != SQLITE_DONE)
        return fail("write front record");
      set_front_record.reset();
    }
    for (const auto& j : w->put_journals) {
      put_journal.bind(1, j.agent_id);
      put_journal.bind(2, j.session_id);
      put_journal.bind(3, j.op);
      put_journal.bind(4, j.phase);
      put_journal.bind(5, j.checkpoint_id);
      put_journal.bind(6, j.restore_name);
      put_journal.bind(7, j.discard_name);
      put_journal.bind(8, int64_t{j.scrub_runtime});
      put_journal.bind(9, j.origin);
      put_journal.bind(10, j.payload);
      if (put_journal.step() != SQLITE_DONE)
        return fail("write journal");
      put_journal.reset();
    }
    for (const auto& j : w->delete_journals) {
      del_session_journal.bind(1, j.agent_id);
      del_session_journal.bind(2, j.session_id);
      if (del_session_journal.step() != SQLITE_DONE)
        return fail("delete journal");
      del_session_journal.reset();
    }
    for (const auto& s : w->delete_sessions) {
      del_session.bind(1, s.agent_id);
      del_session.bind(2, s.session_id);
      del_session_checkpoints.bind(1, s.agent_id);
      del_session_checkpoints.bind(2, s.session_id);
      del_session_journal.bind(1, s.agent_id);
      del_session_journal.bind(2, s.session_id);
      if (del_session.step() != SQLITE_DONE ||
          del_session_checkpoints.step() != SQLITE_DONE ||
          del_session_journal.step() != SQLITE_DONE)
        return fail("delete session");
      del_session.reset();
      del_session_checkpoints.reset();
      del_session_journal.reset();
      if (auto err = runs.delete_session(s.agent_id, s.session_id)) {
        exec("ROLLBACK");
        return err;
      }
    }
    for (const auto& a : w->delete_agents) {
      del_agent_sessions.bind(1, a);
      del_agent_checkpoints.bind(1, a);
      del_agent_journals.bind(1, a);
      del_agent.bind(1, a);
      if (del_agent_sessions.step() != SQLITE_DONE ||
          del_agent_checkpoints.step() != SQLITE_DONE ||
          del_agent_journals.step() != SQLITE_DONE ||
          del_agent.step() != SQLITE_DONE)
        return fail("delete agent");
      del_agent_sessions.reset();
      del_agent_checkpoints.reset();
      del_agent_journals.reset();
      del_agent.reset();
      if (auto err = runs.delete_agent(a)) {
        exec("ROLLBACK");
        return err;
      }
    }
    // After the deletions: a run row of a session created anew in the
    // same batch survives.
    for (const auto& r : w->put_runs)
      if (auto err = runs.put(r)) {
        exec("ROLLBACK");
        return err;
      }
    for (const auto& id : w->release_runs)
      if (auto err = runs.release(id)) {
        exec("ROLLBACK");
        return err;
      }
    if (auto err = apply_write_sets(*stmts_, *w)) {
      exec("ROLLBACK");
      return err;
    }
    for (const auto& e : w->audit) {
      put_audit.bind(1, e.timestamp_ns);
      put_audit.bind(2, e.op);
      put_audit.bind_nullable(3, e.agent_id);
      put_audit.bind_nullable(4, e.session_id);
      put_audit.bind(5, e.fields);
      if (put_audit.step() != SQLITE_DONE)
        return fail("write audit");
      put_audit.reset();
    }
  }
  if (auto err = exec("COMMIT")) {
    exec("ROLLBACK");
    return err;
  }
  return caf::none;
}

expected<run_page> catalog::runs(const run_query& q) {
  return query_runs(db_, q);
}

expected<write_set_page> catalog::write_sets(const session_ref& s) {
  return query_write_sets(db_, s);
}

expected<audit_page> catalog::audit(const audit_query& q) {
  // Empty filters match everything; the limit is fetched plus one to tell
  // whether more records follow.
  statement st{db_, "SELECT seq, timestamp_ns, op, agent_id, session_id, "
                    "fields FROM audit WHERE seq > ?1 "
                    "AND (?2 = '' OR agent_id = ?2) "
                    "AND (?3 = '' OR session_id = ?3) "
                    "AND (?4 = '' OR op = ?4) ORDER BY seq LIMIT ?5"};
  if (!st)
    return db_error(db_, "audit query");
  st.bind(1, q.after);
  st.bind(2, q.agent_id);
  st.bind(3, q.session_id);
  st.bind(4, q.op);
  st.bind(5, q.limit + 1);
  audit_page page;
  page.next_cursor = q.after;
  while (st.step() == SQLITE_ROW) {
    if (static_cast<int64_t>(page.events.size()) == q.limit) {
      page.has_more = true;
      break;
    }
    logged_audit r;
    r.cursor = st.integer(0);
    r.event = {st.integer(1), st.text(2), st.text(3), st.text(4), st.text(5)};
    page.next_cursor = r.cursor;
    page.events.push_back(std::move(r));
  }
  return page;
}

} // namespace allox::store
