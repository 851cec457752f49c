// SPDX-License-Identifier: Apache-2.0
#include "messages/results/agents_json.hpp"

#include "messages/results/json_detail.hpp"

namespace allox {

using results_detail::strings;

json::object to_json(const agent_view& v) {
  json::object o{{"agent_id", v.agent_id},
                 {"workspace_level", "agent"},
                 {"relative_workspace", v.relative_workspace},
                 {"relative_shared", v.relative_shared}};
  if (v.created_ns)
    o["created_ns"] = *v.created_ns;
  if (v.session_ids)
    o["session_ids"] = strings(*v.session_ids);
  return o;
}

json::object to_json(const agent_ids& v) {
  return {{"agent_ids", strings(v.ids)}};
}

json::object to_json(const session_ids& v) {
  return {{"agent_id", v.agent_id}, {"session_ids", strings(v.ids)}};
}

} // namespace allox
