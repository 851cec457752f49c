// SPDX-License-Identifier: Apache-2.0
// checkpoint.diff, of the checkpoints facet of the SESSION actor
// (actors/session/checkpoints.hpp): the paths changed between two trees,
// read on a worker, with their writers when asked (writes.hpp).
#include "actors/session/handlers.hpp"
#include "guest/os/btrfs_diff.hpp"
#include "guest/store/workspace_ops.hpp"

namespace allox::session_facets {

// -- checkpoint.diff ----------------------------------------------------------

path_change_kind change_kind_of(const std::string& change) {
  if (change == "added")
    return path_change_kind::added;
  if (change == "deleted")
    return path_change_kind::deleted;
  return path_change_kind::modified;
}

// Paths added, modified and deleted between two checkpoints, or between a
// checkpoint and current/. The common ancestor in the DAG gives the Btrfs
// generation from which both trees diverged, so only what changed since is
// read (guest/os/btrfs_diff.hpp). Paginated by path.
caf::result<diff_page> handle(self_ptr self, const cmd::checkpoint_diff& c) {
  if (auto err = require_alive(self))
    return err;
  // Writers of earlier incarnations' checkpoints come from the catalog
  // once, at start: a diff that names them waits for that.
  if (c.writers && !self->state.writes_loaded)
    return after_writes_load<diff_page>(self, c);
  auto& st = self->state;
  auto from = st.dag.resolve(c.from);
  if (!from)
    return from.error();
  std::string to;
  if (!c.to.empty()) {
    auto resolved = st.dag.resolve(c.to);
    if (!resolved)
      return resolved.error();
    to = *resolved;
  } else if (st.phase == session_phase::mutating) {
    return conflict("session mutation in progress: " + st.key());
  }
  // current/ descends from the head.
  caf::optional<std::string> ancestor;
  if (!to.empty())
    ancestor = st.dag.common_ancestor(*from, to);
  else if (st.dag.head())
    ancestor = st.dag.common_ancestor(*from, *st.dag.head());
  uint64_t base = 0;
  std::string base_dir; // to read the generation from when the row lacks it
  const auto& paths = st.init.paths;
  if (auto* row = ancestor ? st.dag.find(*ancestor) : nullptr;
      row != nullptr && !row->missing) {
    base = static_cast<uint64_t>(row->generation);
    if (base == 0) // imported from the prototype
      base_dir = paths.checkpoint(st.agent_id(), st.session_id(), *ancestor);
  }
  auto a = st.agent_id();
  auto s = st.session_id();
  auto from_dir = paths.checkpoint(a, s, *from);
  auto to_dir = to.empty() ? paths.current(a, s) : paths.checkpoint(a, s, to);
  diff_page head;
  head.agent_id = a;
  head.session_id = s;
  head.from = *from;
  if (!to.empty())
    head.to = to;
  head.base_checkpoint = ancestor;
  head.with_writers = c.writers;
  std::shared_ptr<const diff_writers> writers;
  if (c.writers)
    writers = writers_between(self, *from, to, ancestor);
  return answer_blocking<diff_page>(
      self,
      [from_dir, to_dir, base, base_dir, cursor = c.cursor, limit = c.limit,
       head, writers,
       baseline = st.init.baseline_ready]() mutable -> expected<diff_page> {
        if (baseline.valid()) // a fork's baseline may still be being made
          baseline.wait();
        if (!base_dir.empty())
          base = static_cast<uint64_t>(store::snapshot_generation(base_dir));
        os::diff_stats stats;
        auto changes = os::diff_trees(from_dir, to_dir, base, &stats);
        if (!changes)
          return changes.error();
        std::vector<os::tree_change> picked; // the page's, for writers
        for (auto& entry : *changes) {
          auto kind = change_kind_of(entry.change);
          count(head.counts, kind);
          if (!cursor.empty() && entry.path <= cursor)
            continue;
          if (static_cast<int64_t>(head.changes.size()) == limit) {
            head.has_more = true;
            continue;
          }
          if (writers)
            picked.push_back(entry);
          head.changes.push_back(
              {std::move(entry.path), kind, std::move(entry.type), {}, {}});
        }
        if (writers)
          name_writers(*writers, from_dir, to_dir, picked, head.changes);
        if (!head.changes.empty())
          head.next_cursor = head.changes.back().path;
        head.cost = {stats.method, stats.changed_inodes, stats.compared_paths,
                     stats.listed_dirs};
        return head;
      });
}

} // namespace allox::session_facets
