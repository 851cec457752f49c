// SPDX-License-Identifier: Apache-2.0
// A prepared SQLite statement as an RAII handle, the catalog's cache of
// prepared statements, and its error for a failed SQLite call. Internal to
// guest/store/ (the catalog).
#pragma once

#include "messages/errors.hpp"

#include <caf/optional.hpp>
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <unordered_map>

namespace allox::store {

/// Statements prepared once per connection and kept for its lifetime.
/// Every catalog write runs the same few dozen statements; parsing and
/// planning them anew for each transaction took more CPU than running
/// them. Destroy the cache before closing its connection.
class statement_cache {
public:
  explicit statement_cache(sqlite3* db) : db_(db) {}
  statement_cache(const statement_cache&) = delete;
  statement_cache& operator=(const statement_cache&) = delete;
  ~statement_cache() {
    for (auto& [sql, stmt] : stmts_)
      sqlite3_finalize(stmt);
  }
  sqlite3* db() const { return db_; }

  /// `sql` prepared, from the cache after the first call; nullptr when it
  /// does not prepare (not cached, so the next call reports it again).
  sqlite3_stmt* get(const char* sql) {
    auto it = stmts_.find(sql);
    if (it != stmts_.end())
      return it->second;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt,
                           nullptr) != SQLITE_OK) {
      sqlite3_finalize(stmt);
      return nullptr;
    }
    stmts_.emplace(sql, stmt);
    return stmt;
  }

private:
  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> stmts_;
};

class statement {
public:
  /// Prepares `sql`; check with operator bool.
  statement(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      stmt_ = nullptr;
  }
  /// Borrows `sql` from `cache`, prepared once; reset (not finalized) when
  /// this handle goes, so the next user finds it unbound and not running.
  /// Two handles of the same text alive at once would share one statement.
  statement(statement_cache& cache, const char* sql)
      : stmt_(cache.get(sql)), owned_(false) {}
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;
  ~statement() {
    if (owned_)
      sqlite3_finalize(stmt_);
    else if (stmt_ != nullptr)
      reset();
  }
  explicit operator bool() const { return stmt_ != nullptr; }
  sqlite3_stmt* get() const { return stmt_; }

  void bind(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()),
                      SQLITE_TRANSIENT);
  }
  /// Binds NULL for an empty string.
  void bind_nullable(int i, const std::string& s) {
    if (s.empty())
      sqlite3_bind_null(stmt_, i);
    else
      bind(i, s);
  }
  /// Binds NULL for none (a present empty string stays "").
  void bind_nullable(int i, const caf::optional<std::string>& s) {
    if (s)
      bind(i, *s);
    else
      sqlite3_bind_null(stmt_, i);
  }
  void bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  int step() { return sqlite3_step(stmt_); }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string text(int col) const {
    auto* p = sqlite3_column_text(stmt_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  /// None for NULL.
  caf::optional<std::string> nullable_text(int col) const {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL)
      return caf::none;
    return text(col);
  }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }

private:
  sqlite3_stmt* stmt_ = nullptr;
  bool owned_ = true;
};

/// An `internal` error naming what failed and SQLite's message.
inline caf::error db_error(sqlite3* db, const std::string& what) {
  return make_error(errc::internal,
                    "metadata database: " + what + ": " + sqlite3_errmsg(db));
}

} // namespace allox::store
