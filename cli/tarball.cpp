// SPDX-License-Identifier: Apache-2.0
#include "cli/tarball.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <sys/stat.h>

#include <filesystem>
#include <memory>

namespace allox::ctl {

namespace {

struct archive_closer {
  void operator()(archive* a) const {
    if (a != nullptr)
      archive_free(a);
  }
};
using archive_ptr = std::unique_ptr<archive, archive_closer>;

failure archive_failure(archive* a, const std::string& what) {
  const char* why = a != nullptr ? archive_error_string(a) : nullptr;
  return {exit_usage, what + ": " + (why != nullptr ? why : "tar error"), {}};
}

/// Copies the data of `path` into the entry being written.
bool copy_data(archive* out, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return false;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> hold{f, std::fclose};
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    if (archive_write_data(out, buf, n) < 0)
      return false;
  return std::ferror(f) == 0;
}

/// True for a relative name without `..` components.
bool relative_inside(const std::string& name) {
  if (name.empty() || name.front() == '/')
    return false;
  size_t start = 0;
  while (start <= name.size()) {
    auto end = name.find('/', start);
    if (end == std::string::npos)
      end = name.size();
    if (name.compare(start, end - start, "..") == 0)
      return false;
    start = end + 1;
  }
  return true;
}

} // namespace

result<std::vector<std::string>> pack_tree(const std::string& dir,
                                           const std::string& tar) {
  namespace fs = std::filesystem;
  archive_ptr out{archive_write_new()};
  archive_write_set_format_pax_restricted(out.get());
  if (archive_write_open_filename(out.get(), tar.c_str()) != ARCHIVE_OK)
    return archive_failure(out.get(), "cannot write " + tar);
  std::vector<std::string> files;
  std::error_code ec;
  // `tree/` names the same directory as `tree`.
  auto root = fs::path{dir}.lexically_normal();
  if (!root.has_filename())
    root = root.parent_path();
  // Symlinks are not followed.
  fs::recursive_directory_iterator it{root, fs::directory_options::none, ec};
  if (ec)
    return usage_error("cannot read " + dir + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator{}; it.increment(ec)) {
    if (ec)
      return usage_error("cannot read " + dir + ": " + ec.message());
    const auto path = it->path().string();
    const auto rel = it->path().lexically_relative(root).generic_string();
    struct stat sb {};
    if (::lstat(path.c_str(), &sb) != 0)
      continue; // gone meanwhile
    if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode) && !S_ISLNK(sb.st_mode))
      continue;
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> entry{
        archive_entry_new(), archive_entry_free};
    archive_entry_copy_pathname(entry.get(), rel.c_str());
    archive_entry_copy_stat(entry.get(), &sb);
    archive_entry_set_uid(entry.get(), 0);
    archive_entry_set_gid(entry.get(), 0);
    if (S_ISLNK(sb.st_mode)) {
      auto target = fs::read_symlink(it->path(), ec);
      if (ec)
        continue;
      archive_entry_copy_symlink(entry.get(), target.c_str());
      archive_entry_set_size(entry.get(), 0);
    } else if (S_ISDIR(sb.st_mode)) {
      archive_entry_set_size(entry.get(), 0);
    }
    if (archive_write_header(out.get(), entry.get()) != ARCHIVE_OK)
      return archive_failure(out.get(), "cannot pack " + path);
    if (S_ISREG(sb.st_mode)) {
      if (!copy_data(out.get(), path))
        return usage_error("cannot read " + path);
      files.push_back(rel);
    }
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK)
    return archive_failure(out.get(), "cannot write " + tar);
  return files;
}

result<std::vector<std::string>> unpack_tree(const std::string& tar,
                                             const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return usage_error("cannot create " + dir + ": " + ec.message());
  // The secure options refuse `..` and symlinks anywhere in a name, so the
  // names are made below the directory's own resolved path.
  auto base = std::filesystem::canonical(dir, ec).string();
  if (ec)
    return usage_error("cannot resolve " + dir + ": " + ec.message());
  archive_ptr in{archive_read_new()};
  archive_read_support_format_tar(in.get());
  if (archive_read_open_filename(in.get(), tar.c_str(), 1 << 16) != ARCHIVE_OK)
    return archive_failure(in.get(), "cannot read " + tar);
  archive_ptr disk{archive_write_disk_new()};
  // Never through a symlink, no owners restored; names are checked below
  // (the absolute prefix `base` is ours).
  archive_write_disk_set_options(disk.get(),
                                 ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
                                     ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                     ARCHIVE_EXTRACT_SECURE_SYMLINKS);
  std::vector<std::string> files;
  archive_entry* entry = nullptr;
  for (;;) {
    int r = archive_read_next_header(in.get(), &entry);
    if (r == ARCHIVE_EOF)
      break;
    if (r != ARCHIVE_OK)
      return archive_failure(in.get(), "cannot read " + tar);
    std::string rel = archive_entry_pathname(entry);
    auto type = archive_entry_filetype(entry);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
      continue;
    if (!relative_inside(rel))
      return usage_error("refusing tar entry outside " + dir + ": " + rel);
    auto local = base + "/" + rel;
    archive_entry_copy_pathname(entry, local.c_str());
    if (archive_write_header(disk.get(), entry) != ARCHIVE_OK)
      return archive_failure(disk.get(), "cannot unpack " + rel);
    if (type == AE_IFREG) {
      const void* buf = nullptr;
      size_t size = 0;
      la_int64_t offset = 0;
      while ((r = archive_read_data_block(in.get(), &buf, &size, &offset)) ==
             ARCHIVE_OK)
        if (archive_write_data_block(disk.get(), buf, size, offset) !=
            ARCHIVE_OK)
          return archive_failure(disk.get(), "cannot write " + local);
      if (r != ARCHIVE_EOF)
        return archive_failure(in.get(), "cannot read " + tar);
      files.push_back(dir + "/" + rel);
    }
    if (archive_write_finish_entry(disk.get()) != ARCHIVE_OK)
      return archive_failure(disk.get(), "cannot write " + local);
  }
  return files;
}

} // namespace allox::ctl
