// SPDX-License-Identifier: Apache-2.0
#include "guest/store/run_output.hpp"

#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "guest/os/fs.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <tuple>
#include <vector>

namespace allox::store {

std::string agent_output_dir(const std::string& audit_root,
                             const std::string& agent) {
  return audit_root + "/sessions/" + agent;
}

std::string session_output_dir(const std::string& audit_root,
                               const std::string& agent,
                               const std::string& session) {
  return agent_output_dir(audit_root, agent) + "/" + session;
}

caf::error ensure_output_dir(const std::string& dir, bool subvolume) {
  // An existing directory stays what it is (one lstat for every run but
  // a session's first): a plain one was made before the store's quotas
  // were on (os::limit_subvolume then says so).
  if (os::kind_of(dir) == os::entry_kind::directory)
    return caf::none;
  if (!subvolume)
    return os::make_dirs(dir);
  if (auto err = os::make_dirs(dir.substr(0, dir.rfind('/'))))
    return err;
  auto err = os::create_subvolume(dir);
  // Made by the other caller meanwhile.
  if (err && os::is_subvolume(dir))
    return caf::none;
  return err;
}

int64_t output_room(const std::string& dir) {
  auto now = os::is_subvolume(dir) ? os::read_qgroup(dir) : std::nullopt;
  if (!now || !now->max_referenced)
    return std::numeric_limits<int64_t>::max();
  auto used = std::min(now->referenced, *now->max_referenced);
  return static_cast<int64_t>(*now->max_referenced - used);
}

expected<size_t> reclaim_output(const std::string& dir,
                                const std::set<std::string>& keep,
                                int64_t bytes) {
  auto names = os::list_dir(dir);
  if (!names)
    return names.error();
  // (last change, name) of each finished run's directory.
  std::vector<std::tuple<int64_t, long, std::string>> runs;
  for (const auto& name : *names) {
    if (keep.count(name))
      continue;
    struct stat st {};
    auto path = dir + "/" + name;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      continue;
    runs.emplace_back(st.st_mtim.tv_sec, st.st_mtim.tv_nsec, name);
  }
  std::sort(runs.begin(), runs.end());
  size_t removed = 0;
  int64_t freed = 0;
  for (const auto& run : runs) {
    if (freed >= bytes)
      break;
    auto path = dir + "/" + std::get<2>(run);
    freed += os::allocated_bytes(path);
    if (auto err = os::remove_tree(path))
      return err;
    ++removed;
  }
  if (removed)
    if (auto err = os::commit_and_clean(dir))
      return err;
  return removed;
}

} // namespace allox::store
