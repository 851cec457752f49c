// SPDX-License-Identifier: Apache-2.0
#include "messages/results/network_json.hpp"

#include "messages/results/json_detail.hpp"

namespace allox {

using results_detail::strings;

json::object to_json(const egress_lists& e) {
  return {{"allow", strings(e.allow)}, {"deny", strings(e.deny)}};
}

json::object to_json(const network_status_view& v) {
  json::object o{{"agent_id", v.agent_id},
                 {"session_id", v.session_id},
                 {"mode", v.mode},
                 {"active", v.active}};
  if (v.proxy_url)
    o["proxy_url"] = *v.proxy_url;
  if (v.egress)
    o["egress"] = to_json(*v.egress);
  if (v.namespace_inode)
    o["namespace_inode"] = *v.namespace_inode;
  if (v.connections) {
    const auto& c = *v.connections;
    o["connections"] = json::object{{"open", c.open},
                                    {"total", c.total},
                                    {"refused", c.refused},
                                    {"failed", c.failed},
                                    {"bytes_sent", c.bytes_sent},
                                    {"bytes_received", c.bytes_received}};
  }
  return o;
}

} // namespace allox
