// SPDX-License-Identifier: Apache-2.0
#include "guest/http/metrics.hpp"

#include <cstdio>
#include <map>
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

/// A dump node's numeric field, or nothing.
const json::value* numeric(const json::object& o, const char* key) {
  auto* v = o.if_contains(key);
  return v && (v->is_int64() || v->is_uint64() || v->is_double()) ? v
                                                                  : nullptr;
}

double as_double(const json::value& v) {
  return v.to_number<double>();
}

/// One actor of the dump, flattened.
struct actor_node {
  std::string kind;
  std::string id;
  const json::object* node;
};

std::string node_id(const json::object& o) {
  std::string id;
  for (const char* key : {"agent_id", "session_id"})
    if (auto* v = o.if_contains(key); v && v->is_string())
      id += (id.empty() ? "" : "/") + std::string{v->get_string()};
  return id;
}

void flatten(const json::value& v, std::vector<actor_node>& out) {
  auto* o = v.if_object();
  if (!o)
    return;
  if (auto* k = o->if_contains("kind"); k && k->is_string())
    out.push_back({std::string{k->get_string()}, node_id(*o), o});
  if (auto* children = o->if_contains("children");
      children && children->is_array())
    for (const auto& c : children->as_array())
      flatten(c, out);
  if (auto* sup = o->if_contains("supervisor"))
    flatten(*sup, out);
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
                                    const json::value& dump) const {
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
  render_actor_metrics(out, dump);
  return out;
}

void render_actor_metrics(std::string& out, const json::value& dump) {
  std::vector<actor_node> nodes;
  flatten(dump, nodes);
  family(out, "allox_up", "gauge",
         "1 when the actor tree answered this scrape, else 0.");
  sample(out, "allox_up", "", nodes.empty() ? "0" : "1");
  if (nodes.empty())
    return;
  std::map<std::string, uint64_t> live;
  uint64_t runs = 0;
  for (const auto& n : nodes) {
    ++live[n.kind];
    if (auto* r = numeric(*n.node, "runs"); r && n.kind == "session")
      runs += static_cast<uint64_t>(as_double(*r));
  }
  family(out, "allox_actors", "gauge", "Live actors by kind.");
  for (const auto& [kind, n] : live)
    sample(out, "allox_actors", label("kind", kind), number(n));
  family(out, "allox_runs", "gauge", "Live runs over all sessions.");
  sample(out, "allox_runs", "", number(runs));
  family(out, "allox_actor_mailbox_messages", "gauge",
         "Messages waiting in an actor's mailbox.");
  for (const auto& n : nodes)
    if (auto* m = numeric(*n.node, "mailbox"))
      sample(out, "allox_actor_mailbox_messages",
             label("kind", n.kind) + "," + label("id", n.id),
             number(as_double(*m)));
  family(out, "allox_actor_restarts_total", "counter",
         "Times an actor was restarted by its supervisor.");
  for (const auto& n : nodes)
    if (auto* c = n.node->if_contains("counters"); c && c->is_object())
      if (auto* r = numeric(c->as_object(), "restarts"))
        sample(out, "allox_actor_restarts_total",
               label("kind", n.kind) + "," + label("id", n.id),
               number(as_double(*r)));
  // Every other counter an actor reports, without a name of its own here
  // (the TRACKER's events received and lost among them).
  family(out, "allox_actor_counter", "gauge",
         "A counter an actor reports in system.dump, by name.");
  for (const auto& n : nodes)
    if (auto* c = n.node->if_contains("counters"); c && c->is_object())
      for (const auto& kv : c->as_object())
        if (kv.key() != "restarts" &&
            (kv.value().is_int64() || kv.value().is_uint64() ||
             kv.value().is_double()))
          sample(out, "allox_actor_counter",
                 label("kind", n.kind) + "," + label("id", n.id) + "," +
                     label("name", kv.key()),
                 number(as_double(kv.value())));
  // The TRACKER's events, under their own names (lost by cause).
  for (const auto& n : nodes) {
    if (n.kind != "tracker")
      continue;
    auto* c = n.node->if_contains("counters");
    if (!c || !c->is_object())
      continue;
    const auto& counters = c->as_object();
    family(out, "allox_tracker_events_received_total", "counter",
           "Process events the tracker received from the kernel.");
    if (auto* r = numeric(counters, "events_received"))
      sample(out, "allox_tracker_events_received_total", "",
             number(as_double(*r)));
    family(out, "allox_tracker_events_lost_total", "counter",
           "Process events lost, by cause (never silently: the runs they "
           "belong to fail).");
    if (auto* lost = counters.if_contains("events_lost");
        lost && lost->is_object())
      for (const auto& kv : lost->as_object())
        if (kv.key() != "total" && kv.value().is_number())
          sample(out, "allox_tracker_events_lost_total",
                 label("cause", kv.key()), number(as_double(kv.value())));
  }
  // The catalog's commit latency, kept by METADATA as a histogram.
  family(out, "allox_catalog_commit_duration_seconds", "histogram",
         "Time of one catalog transaction (a batch of writes).");
  for (const auto& n : nodes)
    if (n.kind == "metadata")
      if (auto* h = n.node->if_contains("commit_seconds"))
        if (auto hist = latency_histogram::from_json(*h))
          hist->render(out, "allox_catalog_commit_duration_seconds", "");
}

} // namespace allox::http
