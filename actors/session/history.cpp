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

/// A workspace path without "/workspace/" or a leading slash; empty when
/// it is the root or climbs out.
std::string workspace_rel(std::string p) {
  for (const char* prefix : {"/workspace/", "/"})
    if (p.rfind(prefix, 0) == 0) {
      p.erase(0, std::string{prefix}.size());
      break;
    }
  std::string out;
  size_t pos = 0;
  while (pos <= p.size()) {
    auto end = p.find('/', pos);
    if (end == std::string::npos)
      end = p.size();
    auto part = p.substr(pos, end - pos);
    if (part == "..")
      return {};
    if (!part.empty() && part != ".")
      out += (out.empty() ? "" : "/") + part;
    pos = end + 1;
  }
  return out;
}

/// One checkpoint of the line, as the worker needs it.
struct step {
  checkpoint_row row;
  std::string dir;
  std::string parent_dir; // empty: the first checkpoint
  std::shared_ptr<const diff_writers> writers;
};

} // namespace

caf::result<history_page> handle(self_ptr self, const cmd::file_history& c) {
  if (auto err = require_alive(self))
    return err;
  if (!self->state.writes_loaded)
    return after_writes_load<history_page>(self, c);
  auto rel = workspace_rel(c.path);
  if (rel.empty())
    return make_error(errc::invalid_argument,
                      "file.history wants a path inside the workspace: " +
                          c.path);
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
  std::vector<step> line;
  bool more = false;
  while (id) {
    const auto* row = st.dag.find(*id);
    if (row == nullptr)
      break;
    if (line.size() == max_scanned) {
      more = true;
      break;
    }
    step x{*row, paths.checkpoint(a, s, *id), {}, writers_of(self, *id)};
    if (row->parent_id)
      x.parent_dir = paths.checkpoint(a, s, *row->parent_id);
    line.push_back(std::move(x));
    id = row->parent_id;
  }
  history_page head;
  head.agent_id = a;
  head.session_id = s;
  head.path = rel;
  auto limit = static_cast<size_t>(c.limit);
  return answer_blocking<history_page>(
      self,
      [line = std::move(line), head, rel, limit,
       more]() mutable -> expected<history_page> {
        size_t k = 0;
        for (; k < line.size() && head.entries.size() < limit; ++k) {
          auto& x = line[k];
          if (x.row.missing)
            continue;
          auto now = state_in(x.dir, rel);
          auto before =
              x.parent_dir.empty() ? path_state{} : state_in(x.parent_dir, rel);
          if (same(now, before))
            continue;
          os::tree_change change;
          change.path = rel;
          change.change = !before.exists ? "added"
                          : !now.exists  ? "deleted"
                                         : "modified";
          change.type = type_of(now.exists ? now.st : before.st);
          change.ino = now.exists ? now.st.st_ino : 0;
          change.from_ino = before.exists ? before.st.st_ino : 0;
          std::vector<path_change> one{{rel,
                                        !before.exists ? path_change_kind::added
                                        : !now.exists
                                            ? path_change_kind::deleted
                                            : path_change_kind::modified,
                                        change.type,
                                        {},
                                        {}}};
          name_writers(*x.writers, x.parent_dir, x.dir, {change}, one);
          head.entries.push_back({x.row.checkpoint_id, x.row.parent_id,
                                  x.row.created_at_ns, std::move(one.front())});
        }
        if (k < line.size() || more) {
          head.has_more = true;
          head.next_cursor = line[k - 1].row.checkpoint_id;
        }
        return head;
      });
}

} // namespace allox::session_facets
