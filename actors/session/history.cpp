// SPDX-License-Identifier: Apache-2.0
// file.history: the checkpoints on the head's line that changed a path,
// newest first, each with its writers (write provenance).
//
//   file.history -> (waits for the catalog's write sets, as a diff does)
//     on the actor: the line from the head (or below the cursor), each
//       checkpoint with its parent's tree and its own interval's writers
//     on a worker: the path's inode in both trees (lstat beneath each
//       root: never through a symlink out of the tree); an inode, size,
//       mode or time that differs is a change -> name_writers
//
// A checkpoint is compared with its parent only, so the cost is two
// lstats per checkpoint looked at, bounded per page.
#include "actors/session/handlers.hpp"
#include "guest/os/workspace_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>

namespace allox::session_facets {

namespace {

/// Checkpoints looked at per page at most, whether they changed the path
/// or not (the cursor goes on from the last).
constexpr size_t max_scanned = 2000;

/// The path's inode in one tree; none when it does not exist there.
struct path_state {
  bool exists = false;
  struct stat st {};
};

path_state state_in(const std::string& tree, const std::string& rel) {
  path_state out;
  auto root = os::workspace_root::open(tree);
  if (!root)
    return out;
  auto parent = root->open_parent(rel);
  if (!parent)
    return out;
  out.exists = ::fstatat(parent->first.get(), parent->second.c_str(), &out.st,
                         AT_SYMLINK_NOFOLLOW) == 0;
  return out;
}

bool same(const path_state& a, const path_state& b) {
  if (a.exists != b.exists)
    return false;
  if (!a.exists)
    return true;
  return a.st.st_ino == b.st.st_ino && a.st.st_size == b.st.st_size &&
         a.st.st_mode == b.st.st_mode &&
         a.st.st_mtim.tv_sec == b.st.st_mtim.tv_sec &&
         a.st.st_mtim.tv_nsec == b.st.st_mtim.tv_nsec &&
         a.st.st_ctim.tv_sec == b.st.st_ctim.tv_sec &&
         a.st.st_ctim.tv_nsec == b.st.st_ctim.tv_nsec;
}

std::string type_of(const struct stat& st) {
  if (S_ISREG(st.st_mode))
    return "file";
  if (S_ISDIR(st.st_mode))
    return "directory";
  if (S_ISLNK(st.st_mode))
    return "symlink";
  return "other";
}

/// The path as file.* take it (relative, without `..`), a /workspace/
/// prefix allowed: a run's view of the same file.
expected<std::string> workspace_rel(std::string_view p) {
  constexpr std::string_view mount = "/workspace/";
  if (p.substr(0, mount.size()) == mount)
    p.remove_prefix(mount.size());
  auto rel = os::clean_path(p);
  if (rel && rel->empty())
    return make_error(errc::invalid_argument,
                      "file.history wants a path below the workspace root");
  return rel;
}

/// One checkpoint of the line, as the worker needs it.
struct step {
  checkpoint_row row;
  std::string dir;
  std::string parent_dir; // empty: the first checkpoint
};

/// A checkpoint that changed the path, found by the first worker step;
/// its writers are named by the second.
struct found {
  step at;
  os::tree_change change;
  std::shared_ptr<const diff_writers> writers;
};

struct history_scan {
  std::vector<found> changes;
  caf::optional<std::string> next_cursor;
};

/// The first `limit` checkpoints of `line` that changed `rel`. Blocking.
history_scan scan(const std::vector<step>& line, const std::string& rel,
                  size_t limit, bool more) {
  history_scan out;
  size_t k = 0;
  for (; k < line.size() && out.changes.size() < limit; ++k) {
    const auto& x = line[k];
    if (x.row.missing)
      continue;
    auto now = state_in(x.dir, rel);
    auto before =
        x.parent_dir.empty() ? path_state{} : state_in(x.parent_dir, rel);
    if (same(now, before))
      continue;
    os::tree_change c;
    c.path = rel;
    c.change = !before.exists ? "added" : !now.exists ? "deleted" : "modified";
    c.type = type_of(now.exists ? now.st : before.st);
    c.ino = now.exists ? now.st.st_ino : 0;
    c.from_ino = before.exists ? before.st.st_ino : 0;
    out.changes.push_back({x, std::move(c), nullptr});
  }
  if (k < line.size() || more)
    out.next_cursor = line[k - 1].row.checkpoint_id;
  return out;
}

} // namespace
} // namespace allox::session_facets

// Between the steps (a local message).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::session_facets::history_scan)

namespace allox::session_facets {

// Three steps: the line on the actor; which checkpoints changed the path
// on a worker (two lstats each); their intervals' writers copied on the
// actor (only theirs: an interval can hold thousands of inodes); the
// writers named on a worker (a change by name resolves a directory).
caf::result<history_page> handle(self_ptr self, const cmd::file_history& c) {
  if (auto err = require_alive(self))
    return err;
  if (!self->state.writes_loaded)
    return after_writes_load<history_page>(self, c);
  auto cleaned = workspace_rel(c.path);
  if (!cleaned)
    return cleaned.error();
  auto rel = std::move(*cleaned);
  auto& st = self->state;
  caf::optional<std::string> id = st.dag.head();
  if (!c.cursor.empty()) {
    const auto* at = st.dag.find(c.cursor);
    if (at == nullptr)
      return make_error(errc::invalid_argument,
                        "unknown cursor (a checkpoint id): " + c.cursor);
    id = at->parent_id;
  }
  const auto& paths = st.init.paths;
  auto a = st.agent_id();
  auto s = st.session_id();
  auto line = std::make_shared<std::vector<step>>();
  bool more = false;
  while (id) {
    const auto* row = st.dag.find(*id);
    if (row == nullptr)
      break;
    if (line->size() == max_scanned) {
      more = true;
      break;
    }
    step x{*row, paths.checkpoint(a, s, *id), {}};
    if (row->parent_id)
      x.parent_dir = paths.checkpoint(a, s, *row->parent_id);
    line->push_back(std::move(x));
    id = row->parent_id;
  }
  history_page head;
  head.agent_id = a;
  head.session_id = s;
  head.path = rel;
  auto limit = static_cast<size_t>(c.limit);
  auto rp = self->make_response_promise<history_page>();
  auto fail = [rp](caf::error err) mutable {
    rp.deliver(std::move(err));
  };
  blocking<history_scan>(
      self,
      [line, rel, limit, more]() -> expected<history_scan> {
        return scan(*line, rel, limit, more);
      },
      [self, rp, head, fail](history_scan& found) mutable {
        for (auto& f : found.changes)
          f.writers = writers_of(self, f.at.row.checkpoint_id);
        head.next_cursor = found.next_cursor;
        head.has_more = static_cast<bool>(found.next_cursor);
        blocking<history_page>(
            self,
            [found = std::move(found),
             head]() mutable -> expected<history_page> {
              for (auto& f : found.changes) {
                std::vector<path_change> one{{f.change.path,
                                              change_kind_of(f.change.change),
                                              f.change.type,
                                              {},
                                              {}}};
                name_writers(*f.writers, f.at.parent_dir, f.at.dir, {f.change},
                             one);
                head.entries.push_back(
                    {f.at.row.checkpoint_id, f.at.row.parent_id,
                     f.at.row.created_at_ns, std::move(one.front())});
              }
              return head;
            },
            [rp](history_page& page) mutable { rp.deliver(std::move(page)); },
            fail);
      },
      fail);
  return rp;
}

} // namespace allox::session_facets
