// SPDX-License-Identifier: Apache-2.0
#include "guest/store/workspace_ops.hpp"

#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "guest/os/fs.hpp"
#include "guest/os/unique_fd.hpp"
#include "guest/store/create_intent.hpp"
#include "messages/ids.hpp"

#include <btrfsutil.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace allox::store {

caf::error check_new_checkpoint(const layout& paths, const std::string& a,
                                const std::string& s, const std::string& id) {
  if (auto err =
          os::require_managed_dir(paths.current(a, s), "session workspace"))
    return make_error(code_of(err) == errc::not_found ? errc::not_found
                                                      : errc::invalid_argument,
                      code_of(err) == errc::not_found
                          ? "session does not exist: " + a + "/" + s
                          : message_of(err));
  if (auto err = os::require_managed_dir(paths.checkpoints_dir(a, s),
                                         "checkpoint directory"))
    return err;
  if (os::kind_of(paths.checkpoint(a, s, id)) != os::entry_kind::missing)
    return make_error(errc::already_exists, "checkpoint already exists: " + id);
  return caf::none;
}

expected<int64_t> snapshot_current(const layout& paths, const std::string& a,
                                   const std::string& s,
                                   const std::string& id) {
  auto target = paths.checkpoint(a, s, id);
  auto current = paths.current(a, s);
  // The ioctl creates the snapshot completely or not at all, in the
  // session's disk group when it has one.
  if (auto err =
          os::create_snapshot(current, target, true, os::disk_group(current)))
    return err;
  return snapshot_generation(target);
}

expected<int64_t> snapshot_entry(const layout& paths, const std::string& a,
                                 const std::string& s, const std::string& name,
                                 const std::string& id) {
  auto target = paths.checkpoint(a, s, id);
  if (auto err =
          os::create_snapshot(paths.session_dir(a, s) + "/" + name, target,
                              true, os::disk_group(paths.current(a, s))))
    return err;
  return snapshot_generation(target);
}

int64_t snapshot_generation(const std::string& path) {
  struct btrfs_util_subvolume_info info {};
  if (btrfs_util_subvolume_info(path.c_str(), 0, &info) != BTRFS_UTIL_OK)
    return 0;
  return static_cast<int64_t>(info.otransid);
}

caf::error prepare_fork(const layout& paths, const checkpoint_row& row) {
  auto dir = paths.session_dir(row.agent_id, row.session_id);
  if (os::kind_of(dir) != os::entry_kind::missing)
    return make_error(errc::already_exists,
                      "session already exists: " +
                          session_key(row.agent_id, row.session_id));
  if (auto err = os::ensure_managed_dir(dir, 0755, "session workspace"))
    return err;
  auto mark = dir + "/" + std::string{fork_pending_name};
  os::unique_fd fd{
      ::open(mark.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)};
  if (!fd)
    return sys_error("create " + mark);
  if (auto err = os::ensure_managed_dir(
          paths.checkpoints_dir(row.agent_id, row.session_id), 0755,
          "checkpoint directory"))
    return err;
  return write_create_intent(paths, row);
}

void settle_fork(const std::string& session_dir) {
  auto mark = session_dir + "/" + std::string{fork_pending_name};
  ::unlink(mark.c_str());
}

caf::error make_fork_current(const std::string& checkpoint,
                             const std::string& session_dir) {
  return os::create_snapshot(checkpoint, session_dir + "/current", false);
}

caf::error finish_fork(const std::string& session_dir) {
  return os::rename_path(session_dir + "/" + std::string{fork_current_name},
                         session_dir + "/current");
}

caf::error remove_via_trash(const std::string& dir, const std::string& parent) {
  if (os::kind_of(dir) == os::entry_kind::missing)
    return caf::none;
  auto trash = parent + "/" + std::string{trash_prefix} + random_hex_token();
  if (auto err = os::rename_path(dir, trash))
    return err;
  return os::remove_tree(trash);
}

caf::error delete_checkpoint(const layout& paths, const std::string& a,
                             const std::string& s, const std::string& id) {
  auto target = paths.checkpoint(a, s, id);
  switch (os::kind_of(target)) {
  case os::entry_kind::missing:
    return caf::none;
  case os::entry_kind::directory:
    return os::remove_tree(target);
  default:
    return make_error(errc::invalid_argument,
                      "checkpoint is not a managed directory: " + target);
  }
}

caf::error make_restore(const layout& paths, const std::string& a,
                        const std::string& s, const std::string& id,
                        const std::string& restore_name) {
  auto source = paths.checkpoint(a, s, id);
  if (auto err = os::require_managed_dir(source, "checkpoint"))
    return make_error(code_of(err) == errc::not_found ? errc::not_found
                                                      : errc::invalid_argument,
                      code_of(err) == errc::not_found
                          ? "checkpoint does not exist: " + id
                          : message_of(err));
  if (auto err =
          os::require_managed_dir(paths.current(a, s), "session workspace"))
    return make_error(code_of(err) == errc::not_found ? errc::not_found
                                                      : errc::invalid_argument,
                      code_of(err) == errc::not_found
                          ? "session does not exist: " + a + "/" + s
                          : message_of(err));
  auto target = paths.session_dir(a, s) + "/" + restore_name;
  // The restored tree joins the session's disk group as it is made, so
  // what it writes counts in the share from the start.
  if (auto err = os::create_snapshot(source, target, false,
                                     os::disk_group(paths.current(a, s)))) {
    os::remove_tree(target);
    return err;
  }
  return caf::none;
}

caf::error rename_in_session(const layout& paths, const std::string& a,
                             const std::string& s, const std::string& from,
                             const std::string& to, bool durable) {
  auto dir = paths.session_dir(a, s);
  if (auto err = os::rename_path(dir + "/" + from, dir + "/" + to))
    return err;
  return durable ? os::fsync_dir(dir) : caf::none;
}

caf::error remove_in_session(const layout& paths, const std::string& a,
                             const std::string& s, const std::string& name) {
  return os::remove_tree(paths.session_dir(a, s) + "/" + name);
}

bool exists_in_session(const layout& paths, const std::string& a,
                       const std::string& s, const std::string& name) {
  return os::kind_of(paths.session_dir(a, s) + "/" + name) !=
         os::entry_kind::missing;
}

namespace {

caf::error scrub_dir(const std::string& root, const std::string& rel,
                     std::vector<std::string>& removed) {
  auto dir = rel.empty() ? root : root + "/" + rel;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr)
    return errno == ENOENT
               ? caf::none
               : make_error(errc::internal,
                            "opendir " + dir + ": " + std::strerror(errno));
  std::vector<std::string> names;
  while (auto* ent = readdir(d)) {
    std::string_view n = ent->d_name;
    if (n != "." && n != "..")
      names.emplace_back(n);
  }
  closedir(d);
  for (const auto& n : names) {
    auto child_rel = rel.empty() ? n : rel + "/" + n;
    auto child = root + "/" + child_rel;
    struct stat st {};
    if (lstat(child.c_str(), &st) != 0)
      continue;
    if (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)) {
      if (unlink(child.c_str()) != 0 && errno != ENOENT)
        return make_error(errc::internal, "unlink " + child);
      removed.push_back(child_rel);
    } else if (S_ISDIR(st.st_mode)) {
      if (auto err = scrub_dir(root, child_rel, removed))
        return err;
    }
  }
  return caf::none;
}

} // namespace

expected<std::vector<std::string>> scrub_runtime(const std::string& workspace) {
  std::vector<std::string> removed;
  auto tmp = workspace + "/.allox-tmp";
  if (os::kind_of(tmp) != os::entry_kind::directory)
    return removed;
  if (auto err = scrub_dir(tmp, "", removed))
    return err;
  std::sort(removed.begin(), removed.end());
  return removed;
}

std::vector<std::string> session_entries(const layout& paths,
                                         const std::string& a,
                                         const std::string& s,
                                         std::string_view prefix) {
  std::vector<std::string> out;
  auto names = os::list_dir(paths.session_dir(a, s));
  if (!names)
    return out;
  for (auto& n : *names)
    if (n.compare(0, prefix.size(), prefix) == 0)
      out.push_back(std::move(n));
  return out;
}

} // namespace allox::store
