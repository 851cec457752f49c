// SPDX-License-Identifier: Apache-2.0
#include "messages/results/pause_json.hpp"

#include "messages/results/json_detail.hpp"

namespace allox {

using results_detail::opt;
using results_detail::strings;

json::object to_json(const pause_result& r) {
  return {{"agent_id", r.agent_id},
          {"session_id", r.session_id},
          {"paused", true},
          {"checkpoint_id", r.checkpoint.checkpoint_id},
          {"kept_memory", r.kept_memory},
          {"runs", strings(r.runs)}};
}

json::object to_json(const resume_result& r) {
  return {{"agent_id", r.agent_id},
          {"session_id", r.session_id},
          {"paused", false},
          {"runs", strings(r.runs)}};
}

json::object to_json(const usage_report& u) {
  return {{"agent_id", u.agent_id},
          {"session_id", u.session_id},
          {"sampled_ns", u.sampled_ns},
          {"paused", u.paused},
          {"runs", u.runs},
          {"processes", u.processes},
          {"cpu",
           {{"usage_usec", u.cpu_usage_usec},
            {"user_usec", u.cpu_user_usec},
            {"system_usec", u.cpu_system_usec}}},
          {"memory",
           {{"bytes", u.memory_bytes},
            {"source", u.memory_source},
            {"total_bytes", u.memory_total_bytes},
            {"peak_bytes", opt(u.memory_peak_bytes)},
            {"oom_kills", opt(u.oom_kills)}}},
          {"pids_current", opt(u.pids_current)},
          {"pids_refused", opt(u.pids_refused)},
          {"disk",
           {{"used_bytes", u.disk_used_bytes},
            {"total_bytes", u.disk_total_bytes},
            {"free_bytes", u.disk_free_bytes}}}};
}

} // namespace allox
