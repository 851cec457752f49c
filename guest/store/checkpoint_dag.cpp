// SPDX-License-Identifier: Apache-2.0
#include "guest/store/checkpoint_dag.hpp"

#include <algorithm>
#include <set>

namespace allox::store {

namespace {

bool creation_order(const checkpoint_row* x, const checkpoint_row* y) {
  return std::tie(x->created_at_ns, x->checkpoint_id) <
         std::tie(y->created_at_ns, y->checkpoint_id);
}

} // namespace

checkpoint_dag::checkpoint_dag(std::vector<checkpoint_row> rows,
                               caf::optional<std::string> head)
    : head_(std::move(head)) {
  for (auto& r : rows) {
    auto id = r.checkpoint_id;
    rows_.emplace(std::move(id), std::move(r));
  }
  if (head_ && rows_.count(*head_) == 0)
    head_ = caf::none;
}

const checkpoint_row* checkpoint_dag::find(std::string_view id) const {
  auto it = rows_.find(id);
  return it == rows_.end() ? nullptr : &it->second;
}

expected<std::string> checkpoint_dag::resolve(std::string_view key) const {
  if (auto* r = find(key); r != nullptr && !r->missing)
    return r->checkpoint_id;
  std::vector<std::string> matches;
  for (auto it = rows_.lower_bound(key);
       it != rows_.end() && it->first.compare(0, key.size(), key) == 0; ++it)
    if (!it->second.missing)
      matches.push_back(it->first);
  if (matches.empty())
    return make_error(errc::not_found,
                      "checkpoint does not exist: " + std::string{key});
  if (matches.size() > 1)
    return make_error(errc::invalid_argument,
                      "checkpoint prefix is ambiguous: " + std::string{key});
  return matches.front();
}

expected<std::string> checkpoint_dag::ancestor(int64_t n) const {
  if (n < 1)
    return make_error(errc::invalid_argument, "num_ancestors must be >= 1");
  if (!head_)
    return make_error(errc::not_found, "checkpoint lineage has no head");
  std::string cur = *head_;
  for (int64_t i = 1; i < n; ++i) {
    auto* r = find(cur);
    if (r == nullptr || !r->parent_id || find(*r->parent_id) == nullptr)
      return make_error(errc::not_found,
                        "checkpoint lineage ends before ancestor " +
                            std::to_string(n));
    cur = *r->parent_id;
  }
  return cur;
}

void checkpoint_dag::add(checkpoint_row row) {
  row.parent_id = head_;
  head_ = row.checkpoint_id;
  auto id = row.checkpoint_id;
  rows_[id] = std::move(row);
}

void checkpoint_dag::move_head(const std::string& id) {
  if (rows_.count(id) > 0)
    head_ = id;
}

std::vector<checkpoint_row> checkpoint_dag::remove(const std::string& id) {
  std::vector<checkpoint_row> changed;
  auto it = rows_.find(id);
  if (it == rows_.end())
    return changed;
  auto parent = it->second.parent_id;
  if (parent && rows_.count(*parent) == 0)
    parent = caf::none;
  for (auto& [cid, row] : rows_) {
    if (row.parent_id == id) {
      row.parent_id = parent;
      changed.push_back(row);
    }
  }
  if (head_ == id)
    head_ = parent;
  rows_.erase(it);
  return changed;
}

void checkpoint_dag::set_missing(const std::string& id, bool missing) {
  if (auto it = rows_.find(id); it != rows_.end())
    it->second.missing = missing;
}

void checkpoint_dag::adopt(checkpoint_row row) {
  auto id = row.checkpoint_id;
  rows_[id] = std::move(row);
}

std::vector<checkpoint_row> checkpoint_dag::rows() const {
  std::vector<checkpoint_row> out;
  out.reserve(rows_.size());
  for (const auto& [id, row] : rows_)
    out.push_back(row);
  return out;
}

std::vector<std::string>
checkpoint_dag::ancestors(const std::string& id) const {
  std::vector<std::string> chain;
  std::set<std::string> seen;
  for (caf::optional<std::string> cur = id; cur && seen.insert(*cur).second;) {
    auto* r = find(*cur);
    if (r == nullptr)
      break;
    chain.push_back(*cur);
    cur = r->parent_id;
  }
  return chain;
}

caf::optional<std::string>
checkpoint_dag::common_ancestor(const std::string& a,
                                const std::string& b) const {
  auto chain_a = ancestors(a);
  std::set<std::string> in_a(chain_a.begin(), chain_a.end());
  for (const auto& id : ancestors(b))
    if (in_a.count(id) > 0)
      return id;
  return caf::none;
}

std::vector<std::string> checkpoint_dag::present_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, row] : rows_)
    if (!row.missing)
      ids.emplace_back(id);
  return ids;
}

std::vector<std::string>
checkpoint_dag::child_ids(const std::string& id) const {
  std::vector<const checkpoint_row*> children;
  for (const auto& [cid, row] : rows_)
    if (row.parent_id == id)
      children.push_back(&row);
  std::sort(children.begin(), children.end(), creation_order);
  std::vector<std::string> out;
  for (auto* c : children)
    out.emplace_back(c->checkpoint_id);
  if (id == head_)
    out.emplace_back(live_marker);
  return out;
}

checkpoint_record checkpoint_dag::record(const checkpoint_row& row) const {
  return {row, child_ids(row.checkpoint_id)};
}

std::vector<checkpoint_record> checkpoint_dag::records(const std::string& after,
                                                       size_t limit,
                                                       bool* more) const {
  // Linear in the number of checkpoints for any page size: only the page
  // is sorted, and only its records get their children looked up.
  const checkpoint_row* from = find(after);
  std::vector<const checkpoint_row*> page;
  page.reserve(rows_.size());
  for (const auto& [id, row] : rows_)
    if (from == nullptr || creation_order(from, &row))
      page.push_back(&row);
  size_t take = limit > 0 ? std::min(limit, page.size()) : page.size();
  if (more)
    *more = page.size() > take;
  std::partial_sort(page.begin(), page.begin() + static_cast<long>(take),
                    page.end(), creation_order);
  page.resize(take);
  std::map<std::string_view, std::vector<const checkpoint_row*>> children;
  for (auto* r : page)
    children[r->checkpoint_id];
  for (const auto& [id, row] : rows_)
    if (row.parent_id)
      if (auto it = children.find(*row.parent_id); it != children.end())
        it->second.push_back(&row);
  std::vector<checkpoint_record> out;
  out.reserve(page.size());
  for (auto* r : page) {
    auto& kids = children[r->checkpoint_id];
    std::sort(kids.begin(), kids.end(), creation_order);
    checkpoint_record rec{*r, {}};
    for (auto* k : kids)
      rec.child_ids.emplace_back(k->checkpoint_id);
    if (r->checkpoint_id == head_)
      rec.child_ids.emplace_back(live_marker);
    out.push_back(std::move(rec));
  }
  return out;
}

} // namespace allox::store
