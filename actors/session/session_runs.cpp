// SPDX-License-Identifier: Apache-2.0
#include "actors/session/session_runs.hpp"

#include "guest/os/btrfs_quota.hpp"

#include <algorithm>

namespace allox {

caf::error check_limit(const exec_config& cfg, const std::string& name,
                       const std::string& value) {
  bool known = false;
  std::string files;
  for (const auto* f : limit_files) {
    known |= name == f;
    files += (files.empty() ? "" : ", ") + std::string{f};
  }
  if (!known)
    return make_error(errc::invalid_argument,
                      "unknown limit: " + name + " (" + files + ")");
  if (value.empty() || value.find_first_of("\n\0") != std::string::npos)
    return make_error(errc::invalid_argument, "invalid value for " + name);
  if (name == disk_limit) {
    if (auto bytes = os::parse_disk_limit(value, cfg.store_bytes); !bytes)
      return bytes.error();
    if (!cfg.store_quotas)
      return make_error(errc::unsupported,
                        "disk.max needs Btrfs quotas on the store, which are "
                        "off (start the daemon with --store-quotas)");
    return caf::none;
  }
  auto controller = name.substr(0, name.find('.'));
  auto available = cfg.cgroups.controllers();
  if (std::find(available.begin(), available.end(), controller) ==
      available.end()) {
    std::string list;
    for (const auto& c : available)
      list += (list.empty() ? "" : ", ") + c;
    return make_error(errc::unsupported,
                      name + " needs the " + controller +
                          " cgroup controller, which is not available here "
                          "(available: " +
                          (list.empty() ? std::string{"none"} : list) + ")");
  }
  return caf::none;
}

std::optional<uint64_t> disk_share_of(const exec_config& cfg,
                                      const limit_list& limits) {
  if (!cfg.store_quotas)
    return std::nullopt;
  for (const auto& [name, value] : limits)
    if (name == disk_limit)
      if (auto bytes = os::parse_disk_limit(value, cfg.store_bytes))
        return *bytes;
  return std::nullopt;
}

} // namespace allox
