// SPDX-License-Identifier: Apache-2.0
#include "guest/store/catalog_writes.hpp"

#include "guest/store/sqlite_statement.hpp"

#include <sqlite3.h>

namespace allox::store {

namespace {

/// Steps a statement once with `bind` applied; resets it either way.
template <class Bind>
caf::error run_once(sqlite3* db, statement& st, const char* what, Bind bind) {
  if (!st)
    return db_error(db, what);
  bind(st);
  auto rc = st.step();
  st.reset();
  return rc == SQLITE_DONE ? caf::none : db_error(db, what);
}

} // namespace

caf::error apply_write_sets(statement_cache& cache, const metadata_write& w) {
  if (w.put_write_sets.empty() && w.delete_checkpoints.empty() &&
      w.delete_sessions.empty() && w.delete_agents.empty())
    return caf::none;
  auto* db = cache.db();
  statement del_checkpoint{cache, "DELETE FROM write_sets WHERE agent_id = ?1 "
                                  "AND session_id = ?2 AND checkpoint_id = ?3"};
  statement del_session{
      cache, "DELETE FROM write_sets WHERE agent_id = ?1 AND session_id = ?2"};
  statement del_agent{cache, "DELETE FROM write_sets WHERE agent_id = ?1"};
  statement put{cache, "INSERT OR REPLACE INTO write_sets (agent_id, "
                       "session_id, checkpoint_id, body) VALUES (?1, ?2, ?3, "
                       "?4)"};
  for (const auto& c : w.delete_checkpoints)
    if (auto err = run_once(db, del_checkpoint, "delete write set",
                            [&c](statement& st) {
                              st.bind(1, c.agent_id);
                              st.bind(2, c.session_id);
                              st.bind(3, c.checkpoint_id);
                            }))
      return err;
  for (const auto& s : w.delete_sessions)
    if (auto err =
            run_once(db, del_session, "delete write sets", [&s](statement& st) {
              st.bind(1, s.agent_id);
              st.bind(2, s.session_id);
            }))
      return err;
  for (const auto& a : w.delete_agents)
    if (auto err = run_once(db, del_agent, "delete write sets",
                            [&a](statement& st) { st.bind(1, a); }))
      return err;
  for (const auto& r : w.put_write_sets)
    if (auto err = run_once(db, put, "write write set", [&r](statement& st) {
          st.bind(1, r.agent_id);
          st.bind(2, r.session_id);
          st.bind(3, r.checkpoint_id);
          st.bind(4, r.body);
        }))
      return err;
  return caf::none;
}

expected<write_set_page> query_write_sets(sqlite3* db, const session_ref& s) {
  statement st{db, "SELECT checkpoint_id, body FROM write_sets WHERE "
                   "agent_id = ?1 AND session_id = ?2"};
  if (!st)
    return db_error(db, "load write sets");
  st.bind(1, s.agent_id);
  st.bind(2, s.session_id);
  write_set_page page;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW)
    page.rows.push_back({s.agent_id, s.session_id, st.text(0), st.text(1)});
  if (rc != SQLITE_DONE)
    return db_error(db, "load write sets");
  return page;
}

} // namespace allox::store
