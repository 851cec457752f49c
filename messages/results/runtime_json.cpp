// SPDX-License-Identifier: Apache-2.0
#include "messages/results/runtime_json.hpp"

#include "messages/results/json_detail.hpp"

namespace allox {

using results_detail::strings;

json::object to_json(const lease_granted& g) {
  return {{"lease_token", g.lease_token}};
}

json::object to_json(const lease_released& r) {
  return {{"released", r.released}};
}

json::object to_json(const background_registered& r) {
  return {{"registered", true}, {"execution_id", r.execution_id}};
}

json::object to_json(const reset_begun& r) {
  json::array executions;
  executions.reserve(r.executions.size());
  for (const auto& e : r.executions)
    executions.push_back(json::object{{"sandbox_id", e.sandbox_id},
                                      {"execution_id", e.execution_id}});
  json::object o{{"reset_token", r.reset_token},
                 {"executions", std::move(executions)}};
  if (r.terminated)
    o["terminated_process_runs"] = strings(r.terminated_process_runs);
  return o;
}

json::object to_json(const reset_completed& r) {
  return {{"completed", true}, {"success", r.success}};
}

json::object cleared_json(const unfence_result& r) {
  return {{"reset", r.reset},
          {"leases", r.leases},
          {"background_executions", r.background_executions},
          {"interrupted_runs", strings(r.interrupted_runs)}};
}

json::object to_json(const unfence_result& r) {
  return {{"agent_id", r.agent_id},
          {"session_id", r.session_id},
          {"unfenced", true},
          {"cleared", cleared_json(r)}};
}

} // namespace allox
