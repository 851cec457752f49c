// SPDX-License-Identifier: Apache-2.0
#include "guest/os/btrfs_diff.hpp"

#include "guest/os/unique_fd.hpp"

#include <btrfsutil.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

namespace allox::os {

namespace {

std::string join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

std::string type_of(mode_t mode) {
  if (S_ISREG(mode))
    return "file";
  if (S_ISDIR(mode))
    return "directory";
  if (S_ISLNK(mode))
    return "symlink";
  return "other";
}

/// lstat below a root; false when missing.
bool stat_at(const std::string& root, const std::string& rel, struct stat& st) {
  auto p = rel.empty() ? root : root + "/" + rel;
  return ::lstat(p.c_str(), &st) == 0;
}

bool same_inode(const struct stat& a, const struct stat& b) {
  // Snapshots keep inode numbers and times of what they did not change.
  return a.st_ino == b.st_ino && a.st_mode == b.st_mode &&
         a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec &&
         a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec &&
         a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

std::vector<std::string> list(const std::string& root, const std::string& rel,
                              diff_stats* stats) {
  std::vector<std::string> names;
  auto p = rel.empty() ? root : root + "/" + rel;
  DIR* d = ::opendir(p.c_str());
  if (d == nullptr)
    return names;
  if (stats)
    ++stats->listed_dirs;
  while (auto* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..")
      names.emplace_back(n);
  }
  ::closedir(d);
  return names;
}

class collector {
public:
  collector(std::string from, std::string to, diff_stats* stats)
      : from_(std::move(from)), to_(std::move(to)), stats_(stats) {}

  /// Every path below `rel` in one tree, reported as added or deleted.
  void whole_subtree(const std::string& root, const std::string& rel,
                     const char* change) {
    for (const auto& n : list(root, rel, stats_)) {
      auto child = join(rel, n);
      struct stat st {};
      if (!stat_at(root, child, st))
        continue;
      add(child, change, st, std::string_view{change} == "added");
      if (S_ISDIR(st.st_mode))
        whole_subtree(root, child, change);
    }
  }

  /// Compares one path present in either tree. With `recurse`, unchanged
  /// directories are descended too (the full walk).
  void compare(const std::string& rel, bool recurse) {
    if (!seen_.insert(rel).second)
      return;
    if (stats_)
      ++stats_->compared_paths;
    struct stat a {
    }, b{};
    bool in_from = stat_at(from_, rel, a);
    bool in_to = stat_at(to_, rel, b);
    if (!in_from && !in_to)
      return;
    if (!in_to) {
      add(rel, "deleted", a, false);
      if (S_ISDIR(a.st_mode))
        whole_subtree(from_, rel, "deleted");
      return;
    }
    if (!in_from) {
      add(rel, "added", b, true);
      if (S_ISDIR(b.st_mode))
        whole_subtree(to_, rel, "added");
      return;
    }
    bool dirs = S_ISDIR(a.st_mode) && S_ISDIR(b.st_mode);
    if (!dirs) {
      if (!same_inode(a, b) || rewritten(a, b)) {
        add(rel, "modified", b, true);
        changes_[rel].from_ino = a.st_ino;
      }
      if (S_ISDIR(a.st_mode))
        whole_subtree(from_, rel, "deleted");
      if (S_ISDIR(b.st_mode))
        whole_subtree(to_, rel, "added");
      return;
    }
    // A directory's own entry is not reported; its children are. A
    // replaced directory (another inode) is compared entry by entry.
    if (recurse || a.st_ino != b.st_ino)
      compare_children(rel, true);
  }

  /// Compares every entry of a directory in either tree.
  void compare_children(const std::string& rel, bool recurse) {
    std::set<std::string> names;
    for (auto& n : list(from_, rel, stats_))
      names.insert(std::move(n));
    for (auto& n : list(to_, rel, stats_))
      names.insert(std::move(n));
    for (const auto& n : names)
      compare(join(rel, n), recurse);
  }

  std::vector<tree_change> result() {
    std::vector<tree_change> out;
    out.reserve(changes_.size());
    for (auto& [path, c] : changes_)
      out.push_back(std::move(c));
    return out;
  }

  const std::string& from() const { return from_; }
  const std::string& to() const { return to_; }

  /// Inodes written after the common ancestor in each tree (generation
  /// search only).
  void set_rewritten(std::set<uint64_t> from, std::set<uint64_t> to) {
    rewritten_from_ = std::move(from);
    rewritten_to_ = std::move(to);
  }

private:
  /// The same inode, written after the common ancestor in either tree,
  /// has changed even when its size and times look the same: times have
  /// the resolution of the kernel's coarse clock, so a same-size rewrite
  /// within one tick leaves stat unchanged.
  bool rewritten(const struct stat& a, const struct stat& b) const {
    return a.st_ino == b.st_ino && (rewritten_from_.count(a.st_ino) > 0 ||
                                    rewritten_to_.count(b.st_ino) > 0);
  }

  /// `st` is the path's stat in the `to` tree when `in_to`, else in the
  /// `from` tree.
  void add(const std::string& rel, const char* change, const struct stat& st,
           bool in_to) {
    tree_change c{rel, change, type_of(st.st_mode), 0, 0};
    (in_to ? c.ino : c.from_ino) = st.st_ino;
    changes_.emplace(rel, std::move(c));
  }

  std::string from_, to_;
  diff_stats* stats_;
  std::set<std::string> seen_;
  std::map<std::string, tree_change> changes_;
  std::set<uint64_t> rewritten_from_, rewritten_to_;
};

// -- the generation search
// --------------------------------------------------------

/// Changed inodes (objectid -> is directory) of the subvolume open at `fd`.
expected<std::map<uint64_t, bool>> changed_inodes(int fd, uint64_t base) {
  std::map<uint64_t, bool> changed;
  constexpr size_t buf_size = 256 * 1024;
  std::vector<uint64_t> storage(
      (sizeof(btrfs_ioctl_search_args_v2) + buf_size) / sizeof(uint64_t) + 1);
  auto* args = reinterpret_cast<btrfs_ioctl_search_args_v2*>(storage.data());
  auto& key = args->key;
  key.tree_id = 0; // the subvolume `fd` belongs to
  key.min_objectid = BTRFS_FIRST_FREE_OBJECTID;
  key.max_objectid = UINT64_MAX;
  key.min_type = BTRFS_INODE_ITEM_KEY;
  key.max_type = BTRFS_INODE_ITEM_KEY;
  key.min_offset = 0;
  key.max_offset = UINT64_MAX;
  key.min_transid = base + 1;
  key.max_transid = UINT64_MAX;
  for (;;) {
    key.nr_items = 4096;
    args->buf_size = buf_size;
    if (::ioctl(fd, BTRFS_IOC_TREE_SEARCH_V2, args) != 0)
      return sys_error("BTRFS_IOC_TREE_SEARCH_V2");
    if (key.nr_items == 0)
      break;
    size_t off = 0;
    btrfs_ioctl_search_header header{};
    for (uint32_t i = 0; i < key.nr_items; ++i) {
      std::memcpy(&header, reinterpret_cast<char*>(args->buf) + off,
                  sizeof(header));
      off += sizeof(header);
      // The key range is a slice of (objectid, type, offset) space, so
      // other item types between two inode items come back too.
      if (header.type == BTRFS_INODE_ITEM_KEY &&
          header.len >= sizeof(btrfs_inode_item)) {
        btrfs_inode_item item{};
        std::memcpy(&item, reinterpret_cast<char*>(args->buf) + off,
                    sizeof(item));
        if (item.transid > base)
          changed[header.objectid] = S_ISDIR(item.mode);
      }
      off += header.len;
    }
    // Continue after the last key returned.
    if (header.offset < UINT64_MAX) {
      key.min_objectid = header.objectid;
      key.min_type = header.type;
      key.min_offset = header.offset + 1;
    } else if (header.type < 255) {
      key.min_objectid = header.objectid;
      key.min_type = header.type + 1;
      key.min_offset = 0;
    } else if (header.objectid < UINT64_MAX) {
      key.min_objectid = header.objectid + 1;
      key.min_type = 0;
      key.min_offset = 0;
    } else {
      break;
    }
    if (key.min_type > BTRFS_INODE_ITEM_KEY) {
      // Nothing more of interest in this objectid.
      if (key.min_objectid == UINT64_MAX)
        break;
      ++key.min_objectid;
      key.min_type = BTRFS_INODE_ITEM_KEY;
      key.min_offset = 0;
    }
  }
  return changed;
}

/// Directory path of an inode inside its subvolume ("" for the root).
expected<std::string> dir_path(int fd, uint64_t ino) {
  btrfs_ioctl_ino_lookup_args args{};
  args.treeid = 0;
  args.objectid = ino;
  if (::ioctl(fd, BTRFS_IOC_INO_LOOKUP, &args) != 0)
    return sys_error("BTRFS_IOC_INO_LOOKUP");
  std::string p = args.name;
  if (!p.empty() && p.back() == '/')
    p.pop_back();
  return p;
}

/// Every path of an inode (hard links included) through its INODE_REFs.
std::vector<std::string> inode_paths(int fd, uint64_t ino) {
  std::vector<std::string> paths;
  constexpr size_t buf_size = 64 * 1024;
  std::vector<uint64_t> storage(
      (sizeof(btrfs_ioctl_search_args_v2) + buf_size) / sizeof(uint64_t) + 1);
  auto* args = reinterpret_cast<btrfs_ioctl_search_args_v2*>(storage.data());
  auto& key = args->key;
  key.tree_id = 0;
  key.min_objectid = key.max_objectid = ino;
  key.min_type = key.max_type = BTRFS_INODE_REF_KEY;
  key.min_offset = 0;
  key.max_offset = UINT64_MAX;
  key.min_transid = 0;
  key.max_transid = UINT64_MAX;
  key.nr_items = 64;
  args->buf_size = buf_size;
  if (::ioctl(fd, BTRFS_IOC_TREE_SEARCH_V2, args) != 0)
    return paths;
  size_t off = 0;
  for (uint32_t i = 0; i < key.nr_items; ++i) {
    btrfs_ioctl_search_header header{};
    std::memcpy(&header, reinterpret_cast<char*>(args->buf) + off,
                sizeof(header));
    off += sizeof(header);
    auto* data = reinterpret_cast<char*>(args->buf) + off;
    if (header.type == BTRFS_INODE_REF_KEY) {
      auto parent = dir_path(fd, header.offset);
      size_t pos = 0;
      while (parent && pos + sizeof(btrfs_inode_ref) <= header.len) {
        btrfs_inode_ref ref{};
        std::memcpy(&ref, data + pos, sizeof(ref));
        pos += sizeof(ref);
        if (pos + ref.name_len > header.len)
          break;
        paths.push_back(join(*parent, std::string(data + pos, ref.name_len)));
        pos += ref.name_len;
      }
    }
    off += header.len;
  }
  return paths;
}

/// Adds the current paths of every changed inode of one tree.
caf::error collect_candidates(const std::string& root, uint64_t base,
                              std::set<std::string>& paths,
                              std::set<std::string>& dirs,
                              std::set<uint64_t>& inodes, diff_stats* stats) {
  unique_fd fd{::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (!fd)
    return sys_error("open " + root);
  // A writable tree (current/) may hold inode updates as delayed items
  // that a tree search cannot see yet; committing the transaction flushes
  // them. Read-only snapshots never change.
  bool read_only = false;
  if (btrfs_util_get_subvolume_read_only_fd(fd.get(), &read_only) !=
          BTRFS_UTIL_OK ||
      !read_only)
    if (btrfs_util_sync_fd(fd.get()) != BTRFS_UTIL_OK)
      return sys_error("sync " + root);
  auto changed = changed_inodes(fd.get(), base);
  if (!changed)
    return changed.error();
  if (stats)
    stats->changed_inodes += changed->size();
  for (const auto& [ino, is_dir] : *changed) {
    inodes.insert(ino);
    if (is_dir) {
      if (auto p = dir_path(fd.get(), ino)) {
        dirs.insert(*p);
        if (!p->empty())
          paths.insert(*p);
      }
    } else {
      for (auto& p : inode_paths(fd.get(), ino))
        paths.insert(std::move(p));
    }
  }
  return caf::none;
}

} // namespace

expected<std::string> directory_path(const std::string& root,
                                     uint64_t dir_ino) {
  unique_fd fd{::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (!fd)
    return sys_error("open " + root);
  return dir_path(fd.get(), dir_ino);
}

expected<std::vector<tree_change>>
diff_walk(const std::string& from, const std::string& to, diff_stats* stats) {
  if (stats)
    stats->method = "walk";
  collector c{from, to, stats};
  c.compare_children("", true);
  return c.result();
}

expected<std::vector<tree_change>> diff_trees(const std::string& from,
                                              const std::string& to,
                                              uint64_t base_generation,
                                              diff_stats* stats) {
  if (base_generation == 0)
    return diff_walk(from, to, stats);
  if (stats)
    stats->method = "generation";
  std::set<std::string> paths, dirs;
  std::set<uint64_t> from_inodes, to_inodes;
  if (auto err = collect_candidates(from, base_generation, paths, dirs,
                                    from_inodes, stats))
    return err;
  if (auto err = collect_candidates(to, base_generation, paths, dirs, to_inodes,
                                    stats))
    return err;
  collector c{from, to, stats};
  c.set_rewritten(std::move(from_inodes), std::move(to_inodes));
  // A changed directory gained or lost entries: compare all of them.
  for (const auto& d : dirs)
    c.compare_children(d, false);
  for (const auto& p : paths)
    c.compare(p, false);
  return c.result();
}

} // namespace allox::os
