// SPDX-License-Identifier: Apache-2.0
// Prometheus metrics (GET /metrics, text exposition format 0.0.4).
//
// The transport's part: request counts and latencies, kept by the HTTP
// server on its loop thread, where every request starts and every reply
// ends, so counting takes no lock and no atomic on the request path. What
// the actors know comes from the metrics front (fronts/metrics/), which
// renders the typed stats of the actor tree; the server appends its text
// to the scrape's answer.
#pragma once

#include "guest/histogram.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace allox::http {

/// What the server itself knows at scrape time.
struct server_gauges {
  size_t connections = 0;
  size_t in_flight = 0;
  uint64_t evicted = 0;
};

/// Per-action request counts and latencies. Loop thread only.
class request_metrics {
public:
  /// Distinct action labels kept; later new names count as "other", so a
  /// client inventing actions cannot grow the daemon.
  static constexpr size_t max_actions = 128;

  /// A request for `action` answered with `status` after `seconds`.
  void observe(std::string_view action, int status, double seconds);

  /// A request refused before it reached an action (401, 404, 408, 413,
  /// 503 ...).
  void rejected(int status);

  /// The transport's exposition: request metrics and server gauges.
  std::string render(const server_gauges& server) const;

private:
  struct action_stats {
    std::map<int, uint64_t> by_status;
    latency_histogram latency;
  };
  std::map<std::string, action_stats, std::less<>> actions_;
  std::map<int, uint64_t> rejected_;
};

} // namespace allox::http
