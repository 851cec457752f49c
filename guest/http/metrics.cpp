// SPDX-License-Identifier: Apache-2.0
#include "guest/http/metrics.hpp"

#include <map>

namespace allox::http {

using metrics_text::family;
using metrics_text::label;
using metrics_text::number;
using metrics_text::sample;

void request_metrics::observe(std::string_view action, int status,
                              double seconds) {
  auto it = actions_.find(action);
  if (it == actions_.end()) {
    // One label is kept for "other".
    auto key = actions_.size() + 1 < max_actions ? std::string{action}
                                                 : std::string{"other"};
    it = actions_.try_emplace(std::move(key)).first;
  }
  ++it->second.by_status[status];
  it->second.latency.observe(seconds);
}

void request_metrics::rejected(int status) {
  ++rejected_[status];
}

std::string request_metrics::render(const server_gauges& server) const {
  std::string out;
  family(out, "allox_rpc_requests_total", "counter",
         "RPC requests answered, by action and HTTP status.");
  for (const auto& [action, stats] : actions_)
    for (const auto& [status, n] : stats.by_status)
      sample(out, "allox_rpc_requests_total",
             label("action", action) + "," +
                 label("code", std::to_string(status)),
             number(n));
  family(out, "allox_rpc_request_duration_seconds", "histogram",
         "Time from a request's last byte to its reply, by action.");
  for (const auto& [action, stats] : actions_)
    stats.latency.render(out, "allox_rpc_request_duration_seconds",
                         label("action", action));
  // The two mutations operators watch most, under their own names.
  const std::pair<const char*, const char*> mutations[] = {
      {"checkpoint.create", "allox_checkpoint_create_duration_seconds"},
      {"session.rollback", "allox_rollback_duration_seconds"}};
  for (const auto& [action, name] : mutations) {
    family(out, name, "histogram",
           std::string{"Latency of "} + action + " over RPC, any outcome.");
    auto it = actions_.find(std::string_view{action});
    (it == actions_.end() ? latency_histogram{} : it->second.latency)
        .render(out, name, "");
  }
  family(out, "allox_http_rejected_requests_total", "counter",
         "Requests refused before reaching an action, by HTTP status.");
  for (const auto& [status, n] : rejected_)
    sample(out, "allox_http_rejected_requests_total",
           label("code", std::to_string(status)), number(n));
  family(out, "allox_http_connections", "gauge", "Open HTTP connections.");
  sample(out, "allox_http_connections", "",
         number(static_cast<uint64_t>(server.connections)));
  family(out, "allox_http_requests_in_flight", "gauge",
         "Requests dispatched to the actors and not yet answered.");
  sample(out, "allox_http_requests_in_flight", "",
         number(static_cast<uint64_t>(server.in_flight)));
  family(out, "allox_http_evicted_connections_total", "counter",
         "Idle connections closed to make room at the connection limit.");
  sample(out, "allox_http_evicted_connections_total", "",
         number(server.evicted));
  return out;
}

} // namespace allox::http
