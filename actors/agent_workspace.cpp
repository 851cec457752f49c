// SPDX-License-Identifier: Apache-2.0
// The agent's own directories (agents/<a>/workspace with shared/ and
// sessions/) and how agent.create and agent.describe name them.
#include "actors/agent.hpp"

#include "guest/os/fs.hpp"

#include <utility>

namespace allox {

json::object describe_agent_workspace(const std::string& agent_id) {
  json::object o;
  o["agent_id"] = agent_id;
  o["workspace_level"] = "agent";
  o["relative_workspace"] = store::layout::rel_agent_workspace(agent_id);
  o["relative_shared"] = store::layout::rel_agent_shared(agent_id);
  return o;
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
  for (const auto& [path, label] : dirs)
    if (auto err = os::ensure_managed_dir(path, 0755, label))
      return err;
  return caf::none;
}

} // namespace allox
