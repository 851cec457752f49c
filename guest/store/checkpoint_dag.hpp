// SPDX-License-Identifier: Apache-2.0
// A session's checkpoint DAG (prototype semantics): a head, parents and
// children, branches after rollback, exact-or-unique-prefix resolution,
// ancestor lookup, re-parenting on removal. Pure logic; the SESSION actor
// owns one and persists every change through the METADATA actor.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"
#include "messages/records.hpp"
#include "messages/results/checkpoints.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace allox::store {

/// Marker child id: "the live current/ descends from here" (head only).
inline constexpr std::string_view live_marker = "__live__";

class checkpoint_dag {
public:
  checkpoint_dag() = default;
  checkpoint_dag(std::vector<checkpoint_row> rows,
                 caf::optional<std::string> head);

  /// None before the first checkpoint, or once the head is gone.
  const caf::optional<std::string>& head() const { return head_; }
  size_t size() const { return rows_.size(); }
  const checkpoint_row* find(std::string_view id) const;

  /// Exact non-missing id, else the unique non-missing id with that prefix.
  expected<std::string> resolve(std::string_view id_or_prefix) const;

  /// 1 = head, 2 = its parent, ...
  expected<std::string> ancestor(int64_t n) const;

  /// Adds a new checkpoint as a child of the head and makes it the head.
  void add(checkpoint_row row);

  /// Moves the head (after a rollback).
  void move_head(const std::string& id);

  /// Removes a checkpoint; its children move to its parent and a removed
  /// head moves to its parent. Returns the rows whose parent changed.
  std::vector<checkpoint_row> remove(const std::string& id);

  /// Marks rows missing or present.
  void set_missing(const std::string& id, bool missing);

  /// Inserts (or replaces) a row without changing the head.
  void adopt(checkpoint_row row);

  void clear_head() { head_ = caf::none; }

  /// Every row, by id.
  std::vector<checkpoint_row> rows() const;

  /// Calls `f(row)` for every row, by id, without copying them.
  template <class F>
  void each(F&& f) const {
    for (const auto& entry : rows_)
      f(entry.second);
  }

  /// The latest checkpoint both `a` and `b` descend from (either may be
  /// that ancestor itself); none if they share no ancestor.
  caf::optional<std::string> common_ancestor(const std::string& a,
                                             const std::string& b) const;

  /// Ids of checkpoints whose snapshot exists, sorted.
  std::vector<std::string> present_ids() const;

  /// Children in creation order, plus the live marker for the head.
  std::vector<std::string> child_ids(const std::string& id) const;

  /// The row with its children.
  checkpoint_record record(const checkpoint_row& row) const;

  /// Records sorted by (created_at_ns, id), starting after the record
  /// named `after` (all when empty), at most `limit` (0: no limit).
  /// `more` tells whether records were left out at the end.
  std::vector<checkpoint_record> records(const std::string& after = {},
                                         size_t limit = 0,
                                         bool* more = nullptr) const;

private:
  std::vector<std::string> ancestors(const std::string& id) const;
  std::map<std::string, checkpoint_row, std::less<>> rows_;
  caf::optional<std::string> head_;
};

} // namespace allox::store
