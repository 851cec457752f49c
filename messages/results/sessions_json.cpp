// SPDX-License-Identifier: Apache-2.0
#include "messages/results/sessions_json.hpp"

#include "messages/results/json_detail.hpp"
#include "messages/results/settings_json.hpp"

namespace allox {

json::object to_json(const session_view& v) {
  json::object o;
  o["agent_id"] = v.agent_id;
  o["session_id"] = v.session_id;
  o["workspace_level"] = "session";
  o["relative_agent_workspace"] = v.relative_agent_workspace;
  o["relative_agent_shared"] = v.relative_agent_shared;
  o["relative_session_workspace"] = v.relative_session_workspace;
  o["relative_workspace"] = v.relative_workspace;
  o["checkpoint_ids"] = results_detail::strings(v.checkpoint_ids);
  o["checkpoint_head"] = results_detail::opt(v.checkpoint_head);
  if (v.limits)
    o["limits"] = to_json(*v.limits);
  if (v.usage)
    o["usage"] = to_json(*v.usage);
  return o;
}

json::object to_json(const session_counters& c) {
  using results_detail::opt;
  return {{"cpu_usage_usec", c.cpu_usage_usec},
          {"memory_bytes", opt(c.memory_bytes)},
          {"memory_peak_bytes", opt(c.memory_peak_bytes)},
          {"pids_current", opt(c.pids_current)},
          {"oom_kills", opt(c.oom_kills)},
          {"pids_refused", opt(c.pids_refused)},
          {"disk_bytes", opt(c.disk_bytes)}};
}

json::object to_json(const session_forked& f) {
  auto o = to_json(f.session);
  o["forked_from"] = json::object{{"session_id", f.source_session_id},
                                  {"checkpoint_id", f.checkpoint_id}};
  return o;
}

json::object to_json(const session_deleted& d) {
  return {{"agent_id", d.agent_id},
          {"session_id", d.session_id},
          {"deleted", true}};
}

json::object to_json(const agent_deleted& d) {
  return {{"agent_id", d.agent_id}, {"deleted", true}};
}

} // namespace allox
