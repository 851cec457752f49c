// SPDX-License-Identifier: Apache-2.0
#include "messages/results/admin_json.hpp"

#include "messages/results/json_detail.hpp"

namespace allox {

json::object to_json(const logged_audit& r) {
  const auto& e = r.event;
  json::object o;
  boost::system::error_code ec;
  auto fields = json::parse(e.fields, ec);
  if (!ec && fields.is_object())
    o = std::move(fields.as_object());
  o["cursor"] = r.cursor;
  o["timestamp_ns"] = e.timestamp_ns;
  o["op"] = e.op;
  if (!e.agent_id.empty())
    o["agent_id"] = e.agent_id;
  if (!e.session_id.empty())
    o["session_id"] = e.session_id;
  return o;
}

json::object to_json(const audit_page& p) {
  json::array events;
  events.reserve(p.events.size());
  for (const auto& r : p.events)
    events.emplace_back(to_json(r));
  return {{"events", std::move(events)},
          {"next_cursor", p.next_cursor},
          {"has_more", p.has_more}};
}

json::object to_json(const store_initialized& r) {
  return {{"root", r.root},
          {"recovered_sessions", results_detail::strings(r.recovered_sessions)}};
}

json::object to_json(const fault_armed&) {
  return {{"armed", true}};
}

json::object to_json(const recovery_summary& r) {
  using results_detail::strings;
  json::object o{{"recovered_sessions", strings(r.recovered_sessions)},
                 {"adopted_agents", strings(r.adopted_agents)},
                 {"adopted_sessions", strings(r.adopted_sessions)},
                 {"forgotten", strings(r.forgotten)},
                 {"finished_deletions", strings(r.finished_deletions)},
                 {"aborted_forks", strings(r.aborted_forks)},
                 {"recovered_forks", strings(r.recovered_forks)},
                 {"purged_trash", r.purged_trash}};
  if (r.imported) {
    boost::system::error_code ec;
    auto v = json::parse(*r.imported, ec);
    o["imported"] = ec ? json::value(*r.imported) : std::move(v);
  }
  o["agents"] = r.agents;
  o["sessions"] = r.sessions;
  o["checkpoints"] = r.checkpoints;
  return o;
}

} // namespace allox
