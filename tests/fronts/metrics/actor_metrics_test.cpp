// SPDX-License-Identifier: Apache-2.0
// The actors' part of GET /metrics (fronts/metrics/), rendered
// from a hand-built stats tree: an entry's kind, never its name, decides
// whether it is a counter, a gauge or not exported at all.
#include "fronts/metrics/actor_metrics.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace allox;
using namespace allox::fronts;

namespace {

bool has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

/// supervisor -> agents -> agent -> session a/s, plus metadata, a tracker
/// and a child that did not answer.
actor_stats tree() {
  actor_stats session;
  session.kind = "session";
  session.agent_id = "a";
  session.session_id = "s";
  session.top().fact("state", "idle").gauge("mailbox", size_t{3});
  session.group("resources").fact("subvolume", "/x").gauge("checkpoints", 4);
  session.top().gauge("runs", size_t{2}).fact("head", "c2");
  session.group("counters")
      .counter("requests", 10)
      .counter("restarts", 1)
      .counter("checkpoints_created", 2)
      .gauge("queued_writes", 1)
      // A number that is only a fact: never a sample.
      .fact("generation", 7);
  session.group("turns").counter("turn_count", 5);
  // What the session's cgroup counted; no memory controller here.
  session.group("usage")
      .counter("cpu_usage_usec", int64_t{2500000})
      .gauge("pids_current", int64_t{7})
      .counter("pids_refused", int64_t{12})
      .gauge("disk_bytes", int64_t{1} << 20);

  actor_stats agent;
  agent.kind = "agent";
  agent.agent_id = "a";
  agent.supervises = true;
  agent.group("counters").counter("restarts", 0);
  agent.children.push_back(session);

  actor_stats agents;
  agents.kind = "agents";
  agents.supervises = true;
  agents.group("counters").counter("requests", 4).gauge("agents", 1);
  agents.children.push_back(agent);

  actor_stats metadata;
  metadata.kind = "metadata";
  std::vector<uint64_t> counts(15, 0);
  counts[0] = 2;
  metadata.top().histogram("commit_seconds",
                           stats_histogram{counts, 0.0002, 2});

  actor_stats tracker;
  tracker.kind = "tracker";
  auto c = tracker.group("counters");
  c.fact("backend", "ebpf").counter("events_received", 100);
  c.group("events_lost").counter("ring_full", 3).counter("total", 3);

  actor_stats sup;
  sup.kind = "supervisor";
  sup.supervises = true;
  sup.children = {agents, metadata, tracker,
                  unresponsive_stats("request timed out")};
  return sup;
}

} // namespace

TEST_CASE("metrics: counters are exported as counters, gauges as gauges, "
          "facts not at all") {
  auto t = tree();
  std::string out;
  render_actor_metrics(out, &t);
  const std::string s = R"(kind="session",id="a/s",)";
  CHECK(has(out, "# TYPE allox_actor_counter_total counter"));
  CHECK(has(out, R"(allox_actor_counter_total{)" + s +
                     R"(name="checkpoints_created"} 2)"));
  CHECK(
      has(out, R"(allox_actor_counter_total{)" + s + R"(name="requests"} 10)"));
  CHECK(has(out, "# TYPE allox_actor_counter gauge"));
  CHECK(has(out, R"(allox_actor_counter{)" + s + R"(name="queued_writes"} 1)"));
  CHECK(
      has(out, R"(allox_actor_counter{kind="agents",id="",name="agents"} 1)"));
  // Each entry under one family only, by its kind.
  CHECK(out.find(R"(allox_actor_counter{)" + s +
                 R"(name="checkpoints_created"})") == std::string::npos);
  CHECK(out.find(R"(allox_actor_counter_total{)" + s +
                 R"(name="queued_writes"})") == std::string::npos);
  // Restarts have their own family.
  CHECK(has(out, "# TYPE allox_actor_restarts_total counter"));
  CHECK(has(out, R"(allox_actor_restarts_total{kind="session",id="a/s"} 1)"));
  CHECK(has(out, R"(allox_actor_restarts_total{kind="agent",id="a"} 0)"));
  CHECK(out.find(R"(name="restarts")") == std::string::npos);
  // Facts, even numeric ones, and groups other than counters stay in
  // system.dump.
  CHECK(out.find(R"(name="generation")") == std::string::npos);
  CHECK(out.find(R"(name="backend")") == std::string::npos);
  CHECK(out.find("turn_count") == std::string::npos);
  CHECK(out.find(R"(name="checkpoints")") == std::string::npos);
}

TEST_CASE("metrics: live actors, runs, mailboxes, the tracker's events and "
          "the catalog's histogram come from the tree") {
  auto t = tree();
  std::string out;
  render_actor_metrics(out, &t);
  CHECK(has(out, "allox_up 1"));
  CHECK(has(out, R"(allox_actors{kind="session"} 1)"));
  CHECK(has(out, R"(allox_actors{kind="supervisor"} 1)"));
  // The child that did not answer is no live actor.
  CHECK(out.find(R"(kind="")") == std::string::npos);
  CHECK(has(out, "allox_runs 2"));
  CHECK(has(out, R"(allox_actor_mailbox_messages{kind="session",id="a/s"} 3)"));
  CHECK(has(out, "# TYPE allox_tracker_events_received_total counter"));
  CHECK(has(out, "allox_tracker_events_received_total 100"));
  CHECK(has(out, R"(allox_tracker_events_lost_total{cause="ring_full"} 3)"));
  CHECK(out.find(R"(cause="total")") == std::string::npos);
  CHECK(has(out, "# TYPE allox_catalog_commit_duration_seconds histogram"));
  CHECK(has(out, "allox_catalog_commit_duration_seconds_count 2"));
  CHECK(
      has(out, R"(allox_catalog_commit_duration_seconds_bucket{le="+Inf"} 2)"));
}

TEST_CASE("metrics: without a tree only allox_up 0 is said") {
  std::string out;
  render_actor_metrics(out, nullptr);
  CHECK(out == "# HELP allox_up 1 when the actor tree answered this scrape, "
               "else 0.\n# TYPE allox_up gauge\nallox_up 0\n");
}

TEST_CASE("metrics: a session's cgroup usage, by agent and session, only "
          "what its controllers count") {
  std::string out;
  auto t = tree();
  render_actor_metrics(out, &t);
  CHECK(has(out, "# TYPE allox_session_cpu_seconds_total counter"));
  CHECK(has(out,
            R"(allox_session_cpu_seconds_total{agent="a",session="s"} 2.5)"));
  CHECK(has(out, R"(allox_session_pids{agent="a",session="s"} 7)"));
  CHECK(has(out, "# TYPE allox_session_pids_refused_total counter"));
  CHECK(has(out,
            R"(allox_session_pids_refused_total{agent="a",session="s"} 12)"));
  CHECK(has(out, "# TYPE allox_session_disk_bytes gauge"));
  CHECK(has(out, R"(allox_session_disk_bytes{agent="a",session="s"} 1048576)"));
  // Without the memory controller: the family, and no sample.
  CHECK(has(out, "# TYPE allox_session_memory_bytes gauge"));
  CHECK(out.find("allox_session_memory_bytes{") == std::string::npos);
  CHECK(out.find("allox_session_oom_kills_total{") == std::string::npos);
}
