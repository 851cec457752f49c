// SPDX-License-Identifier: Apache-2.0
// GET /metrics against the real daemon, read by a strict parser of the
// Prometheus text exposition format (0.0.4).
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"

#include <doctest/doctest.h>

#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace allox;
using namespace allox::test;

namespace {

/// One parsed sample.
struct metric_sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

/// The families and samples of an exposition; parsing fails the test at
/// the first line that breaks the format.
struct exposition {
  std::map<std::string, std::string> types;
  std::vector<metric_sample> samples;

  /// The value of the one sample with `name` and `labels` (all given
  /// labels must match); NaN when there is none.
  double value(const std::string& name,
               const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& s : samples) {
      if (s.name != name)
        continue;
      bool match = true;
      for (const auto& [k, v] : labels)
        match = match && s.labels.count(k) && s.labels.at(k) == v;
      if (match)
        return s.value;
    }
    return NAN;
  }
};

bool valid_name(const std::string& n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0])))
    return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != ':')
      return false;
  return true;
}

/// The family a sample belongs to (histogram suffixes stripped).
std::string family_of(const std::string& name,
                      const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    std::string s{suffix};
    if (name.size() > s.size() &&
        name.compare(name.size() - s.size(), s.size(), s) == 0) {
      auto base = name.substr(0, name.size() - s.size());
      if (types.count(base) && types.at(base) == "histogram")
        return base;
    }
  }
  return name;
}

exposition parse(const std::string& text) {
  exposition e;
  std::set<std::string> series;
  std::istringstream in{text};
  std::string line;
  REQUIRE(!text.empty());
  REQUIRE(text.back() == '\n');
  while (std::getline(in, line)) {
    INFO("line: " << line);
    REQUIRE(!line.empty());
    if (line[0] == '#') {
      std::istringstream words{line};
      std::string hash, kind, name, rest;
      words >> hash >> kind >> name;
      REQUIRE((kind == "HELP" || kind == "TYPE"));
      REQUIRE(valid_name(name));
      if (kind == "TYPE") {
        words >> rest;
        REQUIRE((rest == "counter" || rest == "gauge" || rest == "histogram"));
        REQUIRE(e.types.count(name) == 0);
        e.types[name] = rest;
      }
      continue;
    }
    metric_sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ')
      ++i;
    s.name = line.substr(0, i);
    REQUIRE(valid_name(s.name));
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        auto eq = line.find('=', i);
        REQUIRE(eq != std::string::npos);
        auto key = line.substr(i, eq - i);
        REQUIRE(valid_name(key));
        REQUIRE(line[eq + 1] == '"');
        std::string v;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            ++j;
            REQUIRE((line[j] == '\\' || line[j] == '"' || line[j] == 'n'));
            v += line[j] == 'n' ? '\n' : line[j];
          } else {
            v += line[j];
          }
        }
        REQUIRE(j < line.size());
        REQUIRE(s.labels.count(key) == 0);
        s.labels[key] = v;
        i = j + 1;
        if (line[i] == ',')
          ++i;
        else
          REQUIRE(line[i] == '}');
      }
      ++i;
    }
    REQUIRE(line[i] == ' ');
    auto value = line.substr(i + 1);
    REQUIRE(value.find(' ') == std::string::npos);
    size_t used = 0;
    s.value = value == "+Inf" ? INFINITY : std::stod(value, &used);
    REQUIRE((value == "+Inf" || used == value.size()));
    // Every sample belongs to a declared family, and no series repeats.
    REQUIRE(e.types.count(family_of(s.name, e.types)) == 1);
    std::string key = s.name;
    for (const auto& [k, v] : s.labels)
      key += "|" + k + "=" + v;
    REQUIRE(series.insert(key).second);
    e.samples.push_back(std::move(s));
  }
  // Histograms: cumulative buckets ending in +Inf, equal to _count.
  for (const auto& [name, type] : e.types) {
    if (type != "histogram")
      continue;
    std::map<std::string, std::vector<std::pair<double, double>>> buckets;
    for (const auto& s : e.samples) {
      if (s.name != name + "_bucket")
        continue;
      auto labels = s.labels;
      REQUIRE(labels.count("le"));
      auto le = labels["le"] == "+Inf" ? INFINITY : std::stod(labels["le"]);
      labels.erase("le");
      std::string key;
      for (const auto& [k, v] : labels)
        key += k + "=" + v + ",";
      buckets[key].emplace_back(le, s.value);
    }
    for (const auto& [key, list] : buckets) {
      INFO("histogram " << name << " " << key);
      for (size_t i = 1; i < list.size(); ++i) {
        REQUIRE(list[i].first > list[i - 1].first);
        REQUIRE(list[i].second >= list[i - 1].second);
      }
      REQUIRE(std::isinf(list.back().first));
    }
  }
  return e;
}

} // namespace

TEST_CASE("metrics: --metrics-listen serves them elsewhere, without the "
          "token, and nothing else") {
  auto port = free_port();
  auto opts =
      with_args({"--metrics-listen", "127.0.0.1:" + std::to_string(port)});
  opts.token = "tok";
  daemon_process d{opts};
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  http_client metrics{"127.0.0.1", port};
  auto r = metrics.request("GET", "/metrics");
  REQUIRE(r.status == 200);
  auto e = parse(r.body);
  CHECK(e.value("allox_actors", {{"kind", "session"}}) == 1);
  CHECK(metrics.request("GET", "/health").status == 200);
  // The RPC is not served there, even with the token.
  http_client rpc_there{"127.0.0.1", port, "tok"};
  CHECK(rpc_there.rpc("system.dump").status == 404);
  // The main address keeps its token rule for /metrics.
  http_client anonymous{"127.0.0.1", d.port()};
  CHECK(anonymous.request("GET", "/metrics").status == 401);
}

TEST_CASE("metrics: the exposition is well formed and counts what happened") {
  auto opts = with_execution();
  opts.token = "tok";
  daemon_process d{opts};
  d.start();
  auto& c = d.client();
  // The token rule of the RPC.
  http_client anonymous{"127.0.0.1", d.port()};
  auto refused = anonymous.request("GET", "/metrics");
  CHECK(refused.status == 401);
  CHECK(anonymous.request("GET", "/health").status == 200);
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto base = expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  expect_ok(c.rpc(
      "session.rollback",
      with(ids("a", "s"), {{"checkpoint_id", base.at("checkpoint_id")}})));
  expect_error(c.rpc("checkpoint.describe",
                     with(ids("a", "s"), {{"checkpoint_id", "nope"}})),
               400, "not_found");
  auto run = run_id(start(c, "a", "s", json::array{"sleep", "30"}));
  auto r = c.request("GET", "/metrics");
  REQUIRE(r.status == 200);
  CHECK(r.headers["Content-Type"].find("text/plain; version=0.0.4") == 0);
  auto e = parse(r.body);
  CHECK(e.value("allox_up") == 1);
  CHECK(e.value("allox_rpc_requests_total",
                {{"action", "checkpoint.create"}, {"code", "200"}}) == 2);
  CHECK(e.value("allox_rpc_requests_total",
                {{"action", "checkpoint.describe"}, {"code", "400"}}) == 1);
  CHECK(e.value("allox_rpc_request_duration_seconds_count",
                {{"action", "session.create"}}) == 1);
  CHECK(e.value("allox_checkpoint_create_duration_seconds_count") == 2);
  CHECK(e.value("allox_rollback_duration_seconds_count") == 1);
  CHECK(e.value("allox_http_rejected_requests_total", {{"code", "401"}}) == 1);
  CHECK(e.value("allox_http_connections") >= 1);
  CHECK(e.value("allox_actors", {{"kind", "session"}}) == 1);
  CHECK(e.value("allox_actors", {{"kind", "agent"}}) == 1);
  CHECK(e.value("allox_runs") == 1);
  CHECK(e.value("allox_actor_mailbox_messages",
                {{"kind", "session"}, {"id", "a/s"}}) >= 0);
  CHECK(e.value("allox_actor_restarts_total",
                {{"kind", "session"}, {"id", "a/s"}}) == 0);
  // Counters are counters (named _total), gauges stay gauges.
  CHECK(e.value("allox_actor_counter_total",
                {{"kind", "session"}, {"name", "checkpoints_created"}}) == 2);
  CHECK(e.value("allox_actor_counter",
                {{"kind", "agents"}, {"name", "agents"}}) == 1);
  CHECK(e.types.at("allox_actor_counter_total") == "counter");
  CHECK(e.types.at("allox_actor_counter") == "gauge");
  CHECK(e.types.at("allox_actor_restarts_total") == "counter");
  CHECK(e.value("allox_catalog_commit_duration_seconds_count") >= 1);
  CHECK(e.types.at("allox_rpc_requests_total") == "counter");
  CHECK(e.types.at("allox_catalog_commit_duration_seconds") == "histogram");
  // The session's cgroup usage, by agent and session; cpu.stat is there
  // without any controller.
  CHECK(e.types.at("allox_session_cpu_seconds_total") == "counter");
  CHECK(e.value("allox_session_cpu_seconds_total",
                {{"agent", "a"}, {"session", "s"}}) >= 0);
  auto described = expect_ok(c.rpc("session.describe", ids("a", "s")));
  CHECK(described.at("usage").at("cpu_usage_usec").is_int64());
  expect_ok(c.rpc("process.stop", with(ids("a", "s"), {{"run_id", run}})));
  // Inventing actions cannot grow the label set without bound.
  for (int i = 0; i < 200; ++i)
    c.rpc("made.up." + std::to_string(i));
  auto after = parse(c.request("GET", "/metrics").body);
  std::set<std::string> actions;
  for (const auto& s : after.samples)
    if (s.name == "allox_rpc_requests_total")
      actions.insert(s.labels.at("action"));
  CHECK(actions.size() <= 128);
  CHECK(actions.count("other") == 1);
  CHECK(after.value("allox_runs") == 0);
}
