// SPDX-License-Identifier: Apache-2.0
#include "fronts/metrics/actor_metrics.hpp"

#include "guest/histogram.hpp"

#include <map>
#include <optional>
#include <vector>

namespace allox::fronts {

namespace {

using metrics_text::family;
using metrics_text::label;
using metrics_text::number;
using metrics_text::sample;

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

/// What each live session's cgroup counted (the session's "usage" group),
/// labelled by agent and session: at most seven series per live session,
/// and none for a session whose actor is not running.
void render_session_usage(std::string& out,
                          const std::vector<actor_node>& nodes) {
  struct usage_metric {
    std::string_view entry;
    stats_kind kind;
    std::string_view name;
    std::string_view type;
    std::string_view help;
    double scale;
  };
  static constexpr usage_metric metrics[] = {
      {"cpu_usage_usec", stats_kind::counter, "allox_session_cpu_seconds_total",
       "counter", "CPU time of the session's processes (cpu.stat).", 1e-6},
      {"memory_bytes", stats_kind::gauge, "allox_session_memory_bytes", "gauge",
       "Memory the session's processes use (memory.current).", 1},
      {"memory_peak_bytes", stats_kind::gauge,
       "allox_session_memory_peak_bytes", "gauge",
       "The session's highest memory use (memory.peak).", 1},
      {"pids_current", stats_kind::gauge, "allox_session_pids", "gauge",
       "Tasks in the session's cgroup (pids.current).", 1},
      {"oom_kills", stats_kind::counter, "allox_session_oom_kills_total",
       "counter", "Processes of the session an OOM killer chose.", 1},
      {"pids_refused", stats_kind::counter, "allox_session_pids_refused_total",
       "counter", "Forks refused at the session's pids.max.", 1},
      {"disk_bytes", stats_kind::gauge, "allox_session_disk_bytes", "gauge",
       "Bytes the session's workspace references (its Btrfs qgroup).", 1},
  };
  for (const auto& m : metrics) {
    family(out, m.name, m.type, m.help);
    for (const auto& n : nodes) {
      if (n.kind != "session")
        continue;
      if (auto v = number_of(*n.stats, "usage", m.entry, m.kind))
        sample(out, m.name,
               label("agent", n.stats->agent_id) + "," +
                   label("session", n.stats->session_id),
               number(*v * m.scale));
    }
  }
}

} // namespace

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
  render_session_usage(out, nodes);
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

} // namespace allox::fronts
