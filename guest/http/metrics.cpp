// SPDX-License-Identifier: Apache-2.0
#include "guest/http/metrics.hpp"

#include <cstdio>
#include <map>
#include <optional>
#include <vector>

namespace allox::http {

namespace {

using metrics_text::number;
using metrics_text::sample;

void family(std::string& out, std::string_view name, std::string_view type,
            std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

std::string label(std::string_view k, std::string_view v) {
  return std::string{k} + "=\"" + escape_label(v) + "\"";
}

/// One actor of the tree, flattened.
struct actor_node {
  std::string_view kind;
  std::string id;
  const actor_stats* stats;
};

/// agent_id, agent_id/session_id, or empty.
std::string node_id(const actor_stats& s) {
  std::string id = s.agent_id;
  if (!s.session_id.empty())
    id += (id.empty() ? "" : "/") + s.session_id;
  return id;
}

/// Every actor that reported a kind (an unresponsive child has none).
void flatten(const actor_stats& s, std::vector<actor_node>& out) {
  if (!s.kind.empty())
    out.push_back({s.kind, node_id(s), &s});
  for (const auto& c : s.children)
    flatten(c, out);
}

/// The value of entry `name` in `group` if it is a number of `kind`.
std::optional<double> number_of(const actor_stats& s, std::string_view group,
                                std::string_view name, stats_kind kind) {
  auto* e = s.find(group, name);
  double v = 0;
  if (!e || e->kind != kind || !numeric_value(e->value, v))
    return std::nullopt;
  return v;
}

/// Where every actor keeps its own counters and gauges: exported by name
/// under allox_actor_counter_total and allox_actor_counter. Entries of
/// other groups (turns, share, tracking ...) stay in system.dump, which
/// keeps the number of series per session bounded.
constexpr std::string_view counters_group = "counters";

std::string actor_labels(const actor_node& n) {
  return label("kind", n.kind) + "," + label("id", n.id);
}

} // namespace

std::string escape_label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

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

std::string request_metrics::render(const server_gauges& server,
                                    const actor_stats* tree) const {
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
  render_actor_metrics(out, tree);
  return out;
}

void render_actor_metrics(std::string& out, const actor_stats* tree) {
  std::vector<actor_node> nodes;
  if (tree)
    flatten(*tree, nodes);
  family(out, "allox_up", "gauge",
         "1 when the actor tree answered this scrape, else 0.");
  sample(out, "allox_up", "", nodes.empty() ? "0" : "1");
  if (nodes.empty())
    return;
  std::map<std::string_view, uint64_t> live;
  double runs = 0;
  for (const auto& n : nodes) {
    ++live[n.kind];
    if (n.kind == "session")
      runs += number_of(*n.stats, "", "runs", stats_kind::gauge).value_or(0);
  }
  family(out, "allox_actors", "gauge", "Live actors by kind.");
  for (const auto& [kind, n] : live)
    sample(out, "allox_actors", label("kind", kind), number(n));
  family(out, "allox_runs", "gauge", "Live runs over all sessions.");
  sample(out, "allox_runs", "", number(runs));
  family(out, "allox_actor_mailbox_messages", "gauge",
         "Messages waiting in an actor's mailbox.");
  for (const auto& n : nodes)
    if (auto m = number_of(*n.stats, "", "mailbox", stats_kind::gauge))
      sample(out, "allox_actor_mailbox_messages", actor_labels(n), number(*m));
  family(out, "allox_actor_restarts_total", "counter",
         "Times an actor was restarted by its supervisor.");
  for (const auto& n : nodes)
    if (auto r = number_of(*n.stats, counters_group, "restarts",
                           stats_kind::counter))
      sample(out, "allox_actor_restarts_total", actor_labels(n), number(*r));
  // Every other counter and gauge an actor reports, without a name of its
  // own here (the TRACKER's events received among them), each by the kind
  // the actor gave it.
  auto by_name = [&](std::string_view metric, stats_kind kind) {
    for (const auto& n : nodes)
      for (const auto& e : n.stats->entries) {
        double v = 0;
        if (e.group != counters_group || e.kind != kind ||
            (kind == stats_kind::counter && e.name == "restarts") ||
            !numeric_value(e.value, v))
          continue;
        sample(out, metric, actor_labels(n) + "," + label("name", e.name),
               number(v));
      }
  };
  family(out, "allox_actor_counter_total", "counter",
         "A counter an actor reports in system.dump, by name.");
  by_name("allox_actor_counter_total", stats_kind::counter);
  family(out, "allox_actor_counter", "gauge",
         "A gauge an actor reports among its counters in system.dump, by "
         "name.");
  by_name("allox_actor_counter", stats_kind::gauge);
  // The TRACKER's events, under their own names (lost by cause).
  for (const auto& n : nodes) {
    if (n.kind != "tracker")
      continue;
    const auto& st = *n.stats;
    family(out, "allox_tracker_events_received_total", "counter",
           "Process events the tracker received from the kernel.");
    if (auto r = number_of(st, counters_group, "events_received",
                           stats_kind::counter))
      sample(out, "allox_tracker_events_received_total", "", number(*r));
    family(out, "allox_tracker_events_lost_total", "counter",
           "Process events lost, by cause (never silently: the runs they "
           "belong to fail).");
    for (const auto& e : st.entries) {
      double v = 0;
      if (e.group == "counters/events_lost" && e.kind == stats_kind::counter &&
          e.name != "total" && numeric_value(e.value, v))
        sample(out, "allox_tracker_events_lost_total", label("cause", e.name),
               number(v));
    }
  }
  // The catalog's commit latency, kept by METADATA as a histogram.
  family(out, "allox_catalog_commit_duration_seconds", "histogram",
         "Time of one catalog transaction (a batch of writes).");
  for (const auto& n : nodes)
    if (n.kind == "metadata")
      if (auto* e = n.stats->find("", "commit_seconds");
          e && e->kind == stats_kind::histogram)
        if (auto* h = caf::get_if<stats_histogram>(&e->value))
          if (auto hist = latency_histogram::from_stats(*h))
            hist->render(out, "allox_catalog_commit_duration_seconds", "");
}

} // namespace allox::http
