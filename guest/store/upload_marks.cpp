// SPDX-License-Identifier: Apache-2.0
#include "guest/store/upload_marks.hpp"

#include "guest/os/fs.hpp"
#include "guest/os/unique_fd.hpp"
#include "guest/os/workspace_files.hpp"
#include "guest/os/workspace_transfer.hpp"
#include "messages/ids.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace allox::store {

namespace {

constexpr const char* current_kind = "current";
constexpr const char* shared_kind = "shared";

/// The names beginning with the upload prefix in the directory open at
/// `dirfd` (which stays open).
std::vector<std::string> upload_temps(int dirfd) {
  std::vector<std::string> out;
  int copy = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0)
    return out;
  DIR* d = ::fdopendir(copy);
  if (d == nullptr) {
    ::close(copy);
    return out;
  }
  while (auto* e = ::readdir(d)) {
    std::string_view name{e->d_name};
    if (name.substr(0, os::upload_temp_prefix.size()) == os::upload_temp_prefix)
      out.emplace_back(name);
  }
  ::closedir(d);
  return out;
}

/// Removes the temporary entries beside `rel` beneath `root_dir`.
caf::error clean_beside(const std::string& root_dir, const std::string& rel) {
  auto root = os::workspace_root::open(root_dir);
  if (!root)
    return root.error();
  auto parent = root->open_parent(rel);
  if (!parent) // the directory went with a rollback: nothing is left
    return caf::none;
  auto slash = rel.rfind('/');
  auto dir_rel = slash == std::string::npos ? "" : rel.substr(0, slash + 1);
  for (const auto& name : upload_temps(parent->first.get()))
    if (auto removed = os::remove_path(*root, dir_rel + name, true); !removed)
      return removed.error();
  return caf::none;
}

} // namespace

std::string uploads_dir(const layout& paths, const std::string& a,
                        const std::string& s) {
  return paths.session_dir(a, s) + "/" + std::string{upload_marks_name};
}

expected<std::string> mark_upload(const std::string& dir, bool shared,
                                  const std::string& rel) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return sys_error("mkdir " + dir);
  auto mark = dir + "/" + random_hex_token();
  os::unique_fd fd{::open(mark.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          0600)};
  if (!fd)
    return sys_error("create " + mark);
  auto text = std::string{shared ? shared_kind : current_kind} + "\n" + rel;
  if (::write(fd.get(), text.data(), text.size()) !=
      static_cast<ssize_t>(text.size())) {
    auto err = sys_error("write " + mark);
    ::unlink(mark.c_str());
    return err;
  }
  return mark;
}

void unmark_upload(const std::string& mark) {
  (void)::unlink(mark.c_str());
}

expected<std::vector<std::string>>
clean_upload_leftovers(const layout& paths, const std::string& a,
                       const std::string& s) {
  std::vector<std::string> cleaned;
  auto dir = uploads_dir(paths, a, s);
  auto marks = os::list_dir(dir);
  if (!marks) // no upload was ever marked
    return cleaned;
  for (const auto& name : *marks) {
    auto mark = dir + "/" + name;
    std::ifstream in{mark};
    std::stringstream text;
    text << in.rdbuf();
    auto body = text.str();
    {
      auto nl = body.find('\n');
      if (nl != std::string::npos) {
        auto kind = body.substr(0, nl);
        auto rel = body.substr(nl + 1);
        auto root =
            kind == shared_kind ? paths.agent_shared(a) : paths.current(a, s);
        if (auto err = clean_beside(root, rel))
          return err;
        cleaned.push_back(kind == shared_kind ? "@shared/" + rel : rel);
      }
    }
    unmark_upload(mark);
  }
  return cleaned;
}

} // namespace allox::store
