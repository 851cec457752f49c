// SPDX-License-Identifier: Apache-2.0
// The typed results of the agent actions: agent.create and describe (an
// agent's workspace), agent.list and session.list (ids). Their native
// JSON is written once, in messages/results/agents_json.cpp.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace allox {

/// An agent's workspace: agent.create answers the paths, agent.describe
/// adds when it was created and its sessions.
struct agent_view {
  std::string agent_id;
  /// Paths relative to the store root (guest/store/layout.hpp).
  std::string relative_workspace;
  std::string relative_shared;
  caf::optional<int64_t> created_ns;
  /// Sessions that exist (not those still being created), by id.
  caf::optional<std::vector<std::string>> session_ids;
};

/// agent.list: every agent, by id.
struct agent_ids {
  std::vector<std::string> ids;
};

/// session.list: an agent's sessions, by id.
struct session_ids {
  std::string agent_id;
  std::vector<std::string> ids;
};

} // namespace allox

// Local messages only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::agent_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::agent_ids)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::session_ids)
