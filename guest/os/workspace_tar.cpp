// SPDX-License-Identifier: Apache-2.0
#include "guest/os/workspace_tar.hpp"

#include "guest/os/ownership.hpp"

#include "messages/ids.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

namespace allox::os {

namespace {

struct read_deleter {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct write_deleter {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct entry_deleter {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};
using entry_ptr = std::unique_ptr<archive_entry, entry_deleter>;

caf::error refused(const std::string& why, const std::string& name) {
  return make_error(errc::invalid_argument,
                    "tar entry refused (" + why + "): " + name);
}

// -- extraction ---------------------------------------------------------------

/// The body as libarchive's input; the pull error is kept for the caller.
struct reader_ctx {
  pull_fn pull;
  std::string_view chunk;
  caf::error failure;
  uint64_t received = 0;
};

la_ssize_t read_body(archive* a, void* data, const void** buf) {
  auto* ctx = static_cast<reader_ctx*>(data);
  for (;;) {
    auto more = ctx->pull(ctx->chunk);
    if (!more) {
      ctx->failure = more.error();
      archive_set_error(a, EIO, "the request body ended early");
      return -1;
    }
    if (!*more)
      return 0;
    if (ctx->chunk.empty())
      continue;
    ctx->received += ctx->chunk.size();
    *buf = ctx->chunk.data();
    return static_cast<la_ssize_t>(ctx->chunk.size());
  }
}

/// An entry's name as components, checked against the path rules.
expected<std::vector<std::string>> components(const char* name,
                                              const tar_limits& limits) {
  if (name == nullptr)
    return refused("name not readable", "?");
  std::string_view p{name};
  if (!p.empty() && p.front() == '/')
    return refused("absolute name", std::string{p});
  auto deeper =
      "nested deeper than " + std::to_string(limits.max_depth) + " directories";
  auto shown = std::string{p.substr(0, 200)} + (p.size() > 200 ? "..." : "");
  if (p.size() > 4096)
    return refused(static_cast<size_t>(std::count(p.begin(), p.end(), '/')) >
                           limits.max_depth
                       ? deeper
                       : "name longer than 4096 bytes",
                   shown);
  // Past the length check, clean_path refuses only `..`.
  auto clean = clean_path(p);
  if (!clean)
    return refused("`..` component", shown);
  std::vector<std::string> parts;
  for (size_t i = 0; i < clean->size();) {
    auto j = std::min(clean->find('/', i), clean->size());
    parts.push_back(clean->substr(i, j - i));
    i = j + 1;
  }
  if (parts.size() > limits.max_depth)
    return refused(deeper, shown);
  return parts;
}

/// The temporary tree being filled, and the directory of the last entry
/// (entries come grouped by directory, so most need no walk).
class extraction {
public:
  explicit extraction(int top) : top_(top) {}

  /// The directory holding `parts` (all but the last), walked one
  /// component at a time from the top without following symlinks;
  /// missing directories are created when `create`.
  expected<int> parent_of(const std::vector<std::string>& parts, bool create) {
    std::vector<std::string> dir(parts.begin(), parts.end() - 1);
    if (dir.empty())
      return top_;
    if (dir == cached_path_ && cached_)
      return cached_.get();
    unique_fd cur;
    int at = top_;
    for (const auto& part : dir) {
      if (create && ::mkdirat(at, part.c_str(), 0755) != 0 && errno != EEXIST)
        return sys_error("mkdir " + part);
      unique_fd next{::openat(at, part.c_str(),
                              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
      if (!next) {
        if (errno == ELOOP || errno == ENOTDIR)
          return refused("a parent is a symlink or not a directory",
                         join(parts));
        return sys_error("open " + part);
      }
      cur = std::move(next);
      at = cur.get();
    }
    cached_ = std::move(cur);
    cached_path_ = std::move(dir);
    return cached_.get();
  }

  static std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts)
      out += (out.empty() ? "" : "/") + p;
    return out;
  }

  /// Drops the cache: a directory entry may have replaced what it named.
  void forget() {
    cached_.reset();
    cached_path_.clear();
  }

private:
  int top_;
  unique_fd cached_;
  std::vector<std::string> cached_path_;
};

/// Makes room for a non-directory entry `name` in `dir`.
caf::error clear_for(int dir, const std::string& name,
                     const std::string& shown) {
  if (::unlinkat(dir, name.c_str(), 0) == 0 || errno == ENOENT)
    return caf::none;
  if (errno == EISDIR)
    return refused("replaces a directory", shown);
  return sys_error("replace " + shown);
}

caf::error write_data(archive* a, int fd, const std::string& shown) {
  for (;;) {
    const void* buf = nullptr;
    size_t size = 0;
    la_int64_t offset = 0;
    int r = archive_read_data_block(a, &buf, &size, &offset);
    if (r == ARCHIVE_EOF)
      return caf::none;
    if (r < ARCHIVE_WARN)
      return make_error(errc::invalid_argument, "invalid tar stream at " +
                                                    shown + ": " +
                                                    archive_error_string(a));
    const char* p = static_cast<const char*>(buf);
    while (size > 0) {
      auto n = ::pwrite(fd, p, size, offset);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return sys_error("write " + shown);
      p += n;
      offset += n;
      size -= static_cast<size_t>(n);
    }
  }
}

/// Creates one entry beneath the temporary tree.
caf::error extract_entry(archive* a, archive_entry* e, extraction& tree,
                         const tar_limits& limits) {
  const char* raw = archive_entry_pathname(e);
  auto parts = components(raw, limits);
  if (!parts)
    return parts.error();
  if (parts->empty())
    return caf::none; // "./": the target itself
  auto shown = extraction::join(*parts);
  const char* hardlink = archive_entry_hardlink(e);
  auto type = archive_entry_filetype(e);
  if (hardlink == nullptr && type != AE_IFREG && type != AE_IFDIR &&
      type != AE_IFLNK)
    return refused("device nodes, FIFOs and sockets are not accepted", shown);
  auto dir = tree.parent_of(*parts, true);
  if (!dir)
    return dir.error();
  const auto& name = parts->back();
  auto perm = static_cast<mode_t>(archive_entry_perm(e) & 0777);
  if (hardlink != nullptr) {
    auto target = components(hardlink, limits);
    if (!target)
      return target.error();
    if (target->empty())
      return refused("hard link to the target itself", shown);
    // The link's own directory stays open: looking up the target's
    // directory may replace the cached one.
    unique_fd own{::fcntl(*dir, F_DUPFD_CLOEXEC, 0)};
    auto from = tree.parent_of(*target, false);
    if (!from)
      return from.error();
    if (auto err = clear_for(own.get(), name, shown))
      return err;
    // Without AT_SYMLINK_FOLLOW: a link to a symlink links the symlink.
    if (::linkat(*from, target->back().c_str(), own.get(), name.c_str(), 0) !=
        0)
      return refused("hard link to a missing or earlier-refused entry", shown);
    return caf::none;
  }
  if (type == AE_IFDIR) {
    if (::mkdirat(*dir, name.c_str(), perm | 0700) != 0 && errno != EEXIST)
      return sys_error("mkdir " + shown);
    unique_fd d{::openat(*dir, name.c_str(),
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (!d)
      return refused("a directory over a file or symlink", shown);
    ::fchmod(d.get(), perm);
    tree.forget();
    return caf::none;
  }
  if (auto err = clear_for(*dir, name, shown))
    return err;
  if (type == AE_IFLNK) {
    const char* target = archive_entry_symlink(e);
    if (target == nullptr || ::symlinkat(target, *dir, name.c_str()) != 0)
      return sys_error("symlink " + shown);
    return caf::none;
  }
  unique_fd fd{::openat(*dir, name.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        perm)};
  if (!fd)
    return sys_error("create " + shown);
  if (auto err = write_data(a, fd.get(), shown))
    return err;
  // Trailing holes of a sparse entry.
  if (::ftruncate(fd.get(), archive_entry_size(e)) != 0 ||
      ::fchmod(fd.get(), perm) != 0)
    return sys_error("write " + shown);
  if (archive_entry_mtime_is_set(e)) {
    timespec times[2] = {{0, UTIME_OMIT},
                         {archive_entry_mtime(e), archive_entry_mtime_nsec(e)}};
    ::futimens(fd.get(), times);
  }
  return caf::none;
}

/// Reads the whole stream into the temporary tree at `top`.
expected<json::object> extract_all(int top, reader_ctx& ctx,
                                   const tar_limits& limits) {
  std::unique_ptr<archive, read_deleter> a{archive_read_new()};
  archive_read_support_format_tar(a.get());
  if (archive_read_open(a.get(), &ctx, nullptr, read_body, nullptr) !=
      ARCHIVE_OK)
    return make_error(errc::invalid_argument,
                      std::string{"invalid tar stream: "} +
                          archive_error_string(a.get()));
  extraction tree{top};
  uint64_t entries = 0;
  uint64_t bytes = 0;
  for (;;) {
    archive_entry* e = nullptr;
    int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF)
      break;
    if (r < ARCHIVE_WARN) {
      if (ctx.failure)
        return ctx.failure;
      return make_error(errc::invalid_argument,
                        std::string{"invalid tar stream: "} +
                            archive_error_string(a.get()));
    }
    if (++entries > limits.max_entries)
      return make_error(errc::payload_too_large,
                        "more than " + std::to_string(limits.max_entries) +
                            " tar entries");
    bytes += static_cast<uint64_t>(std::max<la_int64_t>(
        archive_entry_size_is_set(e) ? archive_entry_size(e) : 0, 0));
    if (bytes > limits.max_bytes)
      return make_error(errc::payload_too_large,
                        "tar entries hold more than " +
                            std::to_string(limits.max_bytes) + " bytes");
    if (auto err = extract_entry(a.get(), e, tree, limits))
      return ctx.failure ? ctx.failure : err;
  }
  // Drain the body to its end (tar's trailing blocks), so a truncated or
  // abandoned request is never mistaken for a complete one.
  std::string_view rest;
  for (;;) {
    auto more = ctx.pull(rest);
    if (!more)
      return more.error();
    if (!*more)
      break;
  }
  return json::object{{"entries", static_cast<int64_t>(entries)},
                      {"size", static_cast<int64_t>(bytes)}};
}

// -- creation -----------------------------------------------------------------

/// libarchive's output, gathered into chunks for the connection.
struct writer_ctx {
  const push_fn* push;
  std::string pending;
  caf::error failure;
};

la_ssize_t write_body(archive* a, void* data, const void* buf, size_t len) {
  auto* ctx = static_cast<writer_ctx*>(data);
  ctx->pending.append(static_cast<const char*>(buf), len);
  if (ctx->pending.size() >= transfer_chunk) {
    if (auto err = (*ctx->push)(std::move(ctx->pending))) {
      ctx->failure = err;
      archive_set_error(a, EPIPE, "the client went away");
      return -1;
    }
    ctx->pending.clear();
  }
  return static_cast<la_ssize_t>(len);
}

struct walk_counts {
  uint64_t entries = 0;
  uint64_t skipped = 0;
};

caf::error archive_failed(archive* a, const writer_ctx& ctx) {
  if (ctx.failure)
    return ctx.failure;
  return make_error(errc::internal,
                    std::string{"tar stream: "} + archive_error_string(a));
}

caf::error add_file(archive* a, archive_entry* e, int dirfd,
                    const std::string& name, const writer_ctx& ctx) {
  unique_fd fd{::openat(dirfd, name.c_str(),
                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  struct stat sb {};
  if (!fd || ::fstat(fd.get(), &sb) != 0 || !S_ISREG(sb.st_mode))
    return caf::none; // gone or swapped meanwhile: left out
  archive_entry_set_size(e, sb.st_size);
  if (archive_write_header(a, e) != ARCHIVE_OK)
    return archive_failed(a, ctx);
  std::string buf(transfer_chunk, '\0');
  int64_t left = sb.st_size;
  while (left > 0) {
    auto n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break; // shrank: libarchive pads the entry with zeros
    auto take = std::min<int64_t>(n, left);
    if (archive_write_data(a, buf.data(), static_cast<size_t>(take)) < 0)
      return archive_failed(a, ctx);
    left -= take;
  }
  return caf::none;
}

caf::error add_tree(archive* a, int dirfd, const std::string& prefix,
                    size_t depth, size_t max_depth, walk_counts& counts,
                    const writer_ctx& ctx) {
  if (depth > max_depth)
    return make_error(errc::invalid_argument,
                      "directory nested deeper than " +
                          std::to_string(max_depth) +
                          " levels: " + prefix.substr(0, 200) + "...");
  auto names = dir_entries(dirfd);
  if (!names)
    return names.error();
  for (const auto& n : *names) {
    struct stat sb {};
    if (::fstatat(dirfd, n.c_str(), &sb, AT_SYMLINK_NOFOLLOW) != 0)
      continue; // gone meanwhile
    auto path = prefix + n;
    entry_ptr e{archive_entry_new()};
    archive_entry_set_pathname(e.get(), path.c_str());
    archive_entry_set_perm(e.get(), sb.st_mode & 0777);
    archive_entry_set_mtime(e.get(), sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
    if (S_ISREG(sb.st_mode)) {
      archive_entry_set_filetype(e.get(), AE_IFREG);
      if (auto err = add_file(a, e.get(), dirfd, n, ctx))
        return err;
    } else if (S_ISLNK(sb.st_mode)) {
      std::string target(4096, '\0');
      auto len = ::readlinkat(dirfd, n.c_str(), target.data(), target.size());
      if (len < 0)
        continue;
      target.resize(static_cast<size_t>(len));
      archive_entry_set_filetype(e.get(), AE_IFLNK);
      archive_entry_set_symlink(e.get(), target.c_str());
      if (archive_write_header(a, e.get()) != ARCHIVE_OK)
        return archive_failed(a, ctx);
    } else if (S_ISDIR(sb.st_mode)) {
      unique_fd sub{::openat(dirfd, n.c_str(),
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
      if (!sub)
        continue;
      archive_entry_set_filetype(e.get(), AE_IFDIR);
      if (archive_write_header(a, e.get()) != ARCHIVE_OK)
        return archive_failed(a, ctx);
      ++counts.entries;
      if (auto err = add_tree(a, sub.get(), path + "/", depth + 1, max_depth,
                              counts, ctx))
        return err;
      continue;
    } else {
      ++counts.skipped;
      continue;
    }
    ++counts.entries;
  }
  return caf::none;
}

} // namespace

expected<json::object> receive_tar(const workspace_root& root,
                                   const std::string& rel, pull_fn pull,
                                   const tar_limits& limits) {
  if (rel.empty())
    return make_error(errc::invalid_argument,
                      "a tar stream replaces a directory: name one below the "
                      "workspace root");
  auto parent = root.open_parent(rel);
  if (!parent)
    return parent.error();
  auto& [dirfd, name] = *parent;
  struct stat sb {};
  if (::fstatat(dirfd.get(), name.c_str(), &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
      !S_ISDIR(sb.st_mode))
    return make_error(errc::invalid_argument, "not a directory: " + rel);
  auto tmp = std::string{upload_temp_prefix} + random_hex_token();
  if (::mkdirat(dirfd.get(), tmp.c_str(), 0755) != 0)
    return path_error(rel, errno);
  auto slash = rel.rfind('/');
  auto tmp_rel =
      slash == std::string::npos ? tmp : rel.substr(0, slash + 1) + tmp;
  // Removes the temporary tree (after a failure: the new content; after a
  // swap: the old one).
  auto discard = [&] {
    (void)remove_path(root, tmp_rel, true);
  };
  unique_fd top{::openat(dirfd.get(), tmp.c_str(),
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
  if (!top) {
    discard();
    return sys_error("open " + tmp_rel);
  }
  reader_ctx ctx{std::move(pull), {}, {}, 0};
  auto done = extract_all(top.get(), ctx, limits);
  if (!done) {
    discard();
    return done.error();
  }
  // Everything extracted belongs to the workspace's owner (the sandbox
  // user), as if a run had written it.
  if (auto err = hand_over(top.get(), root.owner_uid(), root.owner_gid())) {
    discard();
    return err;
  }
  // One sync for the whole tree instead of one per file.
  if (::syncfs(top.get()) != 0) {
    discard();
    return sys_error("sync " + rel);
  }
  bool replaced = false;
  if (::renameat2(dirfd.get(), tmp.c_str(), dirfd.get(), name.c_str(),
                  RENAME_NOREPLACE) != 0) {
    if (errno != EEXIST || ::renameat2(dirfd.get(), tmp.c_str(), dirfd.get(),
                                       name.c_str(), RENAME_EXCHANGE) != 0) {
      auto err = path_error(rel, errno);
      discard();
      return err;
    }
    replaced = true;
  }
  if (::fsync(dirfd.get()) != 0)
    return sys_error("fsync the directory of " + rel);
  if (replaced)
    discard();
  auto& out = *done;
  out["path"] = rel;
  out["type"] = "directory";
  out["replaced"] = replaced;
  return out;
}

expected<json::object> send_tar(int dirfd, const push_fn& push,
                                size_t max_depth) {
  // Before the archive: freeing it may still write to its context.
  writer_ctx ctx{&push, {}, {}};
  std::unique_ptr<archive, write_deleter> a{archive_write_new()};
  if (archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK ||
      archive_write_open(a.get(), &ctx, nullptr, write_body, nullptr) !=
          ARCHIVE_OK)
    return archive_failed(a.get(), ctx);
  walk_counts counts;
  if (auto err = add_tree(a.get(), dirfd, "", 0, max_depth, counts, ctx)) {
    // No end-of-archive blocks after a failure: the stream is cut off.
    archive_write_fail(a.get());
    return err;
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK)
    return archive_failed(a.get(), ctx);
  if (!ctx.pending.empty())
    if (auto err = push(std::move(ctx.pending)))
      return err;
  return json::object{{"entries", static_cast<int64_t>(counts.entries)},
                      {"skipped", static_cast<int64_t>(counts.skipped)}};
}

} // namespace allox::os
