// SPDX-License-Identifier: Apache-2.0
// A session's run settings (session.configure, network.configure): the
// network mode, proxy mode's egress lists, cgroup limits and max_runs. The
// session keeps its own as catalog text (sessions.exec_settings) over the
// daemon's defaults; what is unset follows the defaults. The text and the
// native wire's JSON are written in messages/results/settings_json.hpp.
#pragma once

#include "messages/results/network.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace allox {

/// Cgroup limits, by interface file (`memory.max` ...), in the order they
/// were first set.
using limit_list = std::vector<std::pair<std::string, std::string>>;

/// Sets `name` to `value`, in place when it is set already.
void set_limit(limit_list& limits, const std::string& name,
               std::string value);

/// Removes `name`; the others keep their order.
void clear_limit(limit_list& limits, const std::string& name);

/// The settings a session chose itself.
struct own_settings {
  /// "inherit", "isolated" or "proxy".
  caf::optional<std::string> network;
  caf::optional<egress_lists> egress;
  /// Over the daemon's default limits, file by file.
  limit_list limits;
  caf::optional<int64_t> max_runs;

  bool empty() const {
    return !network && !egress && limits.empty() && !max_runs;
  }
};

/// The settings in force for the session's next run.
struct run_settings {
  std::string network;
  egress_lists egress;
  /// The daemon's defaults, overridden and extended by the session's own.
  limit_list limits;
  int64_t max_runs = 1;
};

/// `own` over the daemon's defaults.
run_settings effective_settings(const own_settings& own,
                                const std::string& default_network,
                                const limit_list& default_limits);

/// session.configure: the settings in force once the change is committed.
struct settings_view {
  std::string agent_id;
  std::string session_id;
  run_settings settings;
};

} // namespace allox

// Local messages only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::settings_view)
