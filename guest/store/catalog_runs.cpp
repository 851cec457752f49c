// SPDX-License-Identifier: Apache-2.0
#include "guest/store/catalog_runs.hpp"

#include "guest/store/sqlite_statement.hpp"

#include <sqlite3.h>

namespace allox::store {

namespace {

constexpr const char* run_columns =
    "run_id, agent_id, session_id, created_ns, state, fences, row";

run_record read_run(const statement& st) {
  return {st.text(0), st.text(1),         st.text(2), st.integer(3),
          st.text(4), st.integer(5) != 0, st.text(6)};
}

std::string select_runs(const char* rest) {
  return std::string{"SELECT "} + run_columns + " FROM runs " + rest;
}

} // namespace

struct run_writer_statements::impl {
  explicit impl(statement_cache& cache)
      : db(cache.db()),
        put(cache,
            "INSERT OR REPLACE INTO runs (run_id, agent_id, session_id, "
            "created_ns, state, fences, row) VALUES (?1, ?2, ?3, ?4, ?5, "
            "?6, ?7)"),
        release(cache, "UPDATE runs SET fences = 0, row = json_set(row, "
                       "'$.session_fenced', json('false')) WHERE run_id = ?1"),
        del_session(cache,
                    "DELETE FROM runs WHERE agent_id = ?1 AND session_id = ?2"),
        del_agent(cache, "DELETE FROM runs WHERE agent_id = ?1"),
        mark(cache, "INSERT OR REPLACE INTO meta (key, value) VALUES "
                    "('runs_imported', strftime('%s','now'))") {}
  sqlite3* db;
  statement put;
  statement release;
  statement del_session;
  statement del_agent;
  statement mark;
};

run_writer_statements::run_writer_statements(statement_cache& cache)
    : impl_(std::make_unique<impl>(cache)) {}

run_writer_statements::~run_writer_statements() = default;

bool run_writer_statements::ok() const {
  return impl_->put && impl_->release && impl_->del_session &&
         impl_->del_agent && impl_->mark;
}

caf::error run_writer_statements::put(const run_record& r) {
  auto& st = impl_->put;
  st.bind(1, r.run_id);
  st.bind(2, r.agent_id);
  st.bind(3, r.session_id);
  st.bind(4, r.created_ns);
  st.bind(5, r.state);
  st.bind(6, int64_t{r.fences});
  st.bind(7, r.row);
  auto rc = st.step();
  st.reset();
  return rc == SQLITE_DONE ? caf::none : db_error(impl_->db, "write run");
}

caf::error run_writer_statements::release(const std::string& run_id) {
  auto& st = impl_->release;
  st.bind(1, run_id);
  auto rc = st.step();
  st.reset();
  return rc == SQLITE_DONE ? caf::none : db_error(impl_->db, "release run");
}

caf::error
run_writer_statements::delete_session(const std::string& agent_id,
                                      const std::string& session_id) {
  auto& st = impl_->del_session;
  st.bind(1, agent_id);
  st.bind(2, session_id);
  auto rc = st.step();
  st.reset();
  return rc == SQLITE_DONE ? caf::none
                           : db_error(impl_->db, "delete session runs");
}

caf::error run_writer_statements::delete_agent(const std::string& agent_id) {
  auto& st = impl_->del_agent;
  st.bind(1, agent_id);
  auto rc = st.step();
  st.reset();
  return rc == SQLITE_DONE ? caf::none
                           : db_error(impl_->db, "delete agent runs");
}

caf::error run_writer_statements::mark_imported() {
  auto& st = impl_->mark;
  auto rc = st.step();
  st.reset();
  return rc == SQLITE_DONE ? caf::none : db_error(impl_->db, "write meta");
}

caf::error load_start_runs(sqlite3* db, catalog_snapshot& snap) {
  // The partial index runs_at_start covers exactly this condition.
  auto sql = select_runs("WHERE fences = 1 OR state IN ('starting', "
                         "'running') ORDER BY created_ns, run_id");
  statement runs{db, sql.c_str()};
  if (!runs)
    return db_error(db, "load runs");
  while (runs.step() == SQLITE_ROW)
    snap.runs.push_back(read_run(runs));
  statement imported{db, "SELECT 1 FROM meta WHERE key = 'runs_imported'"};
  if (!imported)
    return db_error(db, "load meta");
  snap.runs_imported = imported.step() == SQLITE_ROW;
  return caf::none;
}

expected<run_page> query_runs(sqlite3* db, const run_query& q) {
  run_page page;
  if (!q.run_id.empty()) {
    auto sql = select_runs("WHERE run_id = ?1");
    statement one{db, sql.c_str()};
    if (!one)
      return db_error(db, "run query");
    one.bind(1, q.run_id);
    if (one.step() == SQLITE_ROW)
      page.runs.push_back(read_run(one));
    return page;
  }
  if (!q.after.empty()) {
    statement known{db, "SELECT 1 FROM runs WHERE run_id = ?1 AND agent_id = "
                        "?2 AND session_id = ?3"};
    if (!known)
      return db_error(db, "run query");
    known.bind(1, q.after);
    known.bind(2, q.agent_id);
    known.bind(3, q.session_id);
    if (known.step() != SQLITE_ROW)
      return make_error(errc::invalid_argument, "unknown cursor: " + q.after);
  }
  // Served by runs_by_session: a page costs O(page), whatever the history.
  // One row more than asked tells whether more follow.
  auto sql = select_runs(
      "WHERE agent_id = ?1 AND session_id = ?2 AND (?3 = '' OR (created_ns, "
      "run_id) > (SELECT created_ns, run_id FROM runs WHERE run_id = ?3)) "
      "ORDER BY created_ns, run_id LIMIT ?4");
  statement st{db, sql.c_str()};
  if (!st)
    return db_error(db, "run query");
  st.bind(1, q.agent_id);
  st.bind(2, q.session_id);
  st.bind(3, q.after);
  st.bind(4, q.limit > 0 ? q.limit + 1 : int64_t{-1});
  while (st.step() == SQLITE_ROW) {
    if (q.limit > 0 && static_cast<int64_t>(page.runs.size()) == q.limit) {
      page.has_more = true;
      break;
    }
    page.runs.push_back(read_run(st));
  }
  return page;
}

} // namespace allox::store
