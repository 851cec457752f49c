// SPDX-License-Identifier: Apache-2.0
// The agent's own directories (agents/<a>/workspace with shared/ and
// sessions/) and how agent.create and agent.describe name them.
#include "actors/agent.hpp"

#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "guest/os/fs.hpp"

#include <utility>

namespace allox {

agent_view describe_agent_workspace(const std::string& agent_id) {
  agent_view v;
  v.agent_id = agent_id;
  v.relative_workspace = store::layout::rel_agent_workspace(agent_id);
  v.relative_shared = store::layout::rel_agent_shared(agent_id);
  return v;
}

caf::error ensure_agent_dirs(const store::layout& paths,
                             const std::string& agent_id) {
  const std::pair<std::string, const char*> dirs[] = {
      {paths.agents_dir(), "agents directory"},
      {paths.agent_dir(agent_id), "agent directory"},
      {paths.agent_workspace(agent_id), "agent workspace"},
      {paths.agent_shared(agent_id), "agent shared directory"},
      {paths.sessions_dir(agent_id), "agent sessions directory"},
  };
  for (const auto& [path, label] : dirs) {
    // With the store's quotas on, shared/ is a subvolume of its own, which
    // the agent holds to the daemon's default share (limit_shared_area): a
    // plain directory would count in no share at all.
    if (path == paths.agent_shared(agent_id) &&
        os::kind_of(path) == os::entry_kind::missing &&
        os::quotas_enabled(paths.root))
      if (auto err = os::create_subvolume(path);
          err && os::kind_of(path) != os::entry_kind::directory)
        return err;
    if (auto err = os::ensure_managed_dir(path, 0755, label))
      return err;
  }
  return caf::none;
}

} // namespace allox
