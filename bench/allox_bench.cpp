// SPDX-License-Identifier: Apache-2.0
// allox-bench: load generators and raw baselines for docs/benchmarks.md.
//
//   allox-bench create --port P --count N [--connections C] [--agents A]
//       session.create over keep-alive connections; latency percentiles.
//   allox-bench subvolumes --dir D --count N
//       the raw kernel work of a session.create (libbtrfsutil subvolume +
//       .allox-tmp + directory fsync), same percentiles: the baseline.
//   allox-bench run-logs --dir D --count N
//       what a run start adds when its session's logs are a subvolume at
//       the share (the checks of guest/store/run_output.hpp), beside the
//       raw work of every run start: its directory and three log files.
//       D: a directory on a scratch Btrfs filesystem (quotas are turned on).
//   allox-bench counters --group G --count N
//       os::read_counters of cgroup G: what session.describe's usage and
//       each session of a scrape add.
//
// Output: one JSON object per run on stdout.
#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_diff.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "guest/store/run_output.hpp"
#include "guest/store/workspace_ops.hpp"
#include "tests/fixtures/http_client.hpp"

#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>
#include <vector>

using namespace allox;
using clock_type = std::chrono::steady_clock;

namespace {

json::object summarize(std::vector<double> micros, double seconds) {
  std::sort(micros.begin(), micros.end());
  auto pct = [&](double p) {
    if (micros.empty())
      return 0.0;
    auto idx = static_cast<size_t>(p * static_cast<double>(micros.size() - 1));
    return micros[idx];
  };
  json::object o;
  o["count"] = micros.size();
  o["p50_us"] = pct(0.50);
  o["p99_us"] = pct(0.99);
  o["max_us"] = micros.empty() ? 0.0 : micros.back();
  o["seconds"] = seconds;
  o["per_second"] =
      seconds > 0 ? static_cast<double>(micros.size()) / seconds : 0.0;
  return o;
}

int create_sessions(const std::string& host, uint16_t port, size_t count,
                    size_t connections, size_t agents,
                    const std::string& prefix) {
  std::vector<std::vector<double>> per_thread(connections);
  std::atomic<size_t> next{0};
  std::atomic<size_t> failures{0};
  auto start = clock_type::now();
  std::vector<std::thread> threads;
  for (size_t t = 0; t < connections; ++t)
    threads.emplace_back([&, t] {
      test::http_client client{host, port};
      for (;;) {
        auto i = next.fetch_add(1);
        if (i >= count)
          break;
        json::object p{{"agent_id", prefix + "a" + std::to_string(i % agents)},
                       {"session_id", prefix + "s" + std::to_string(i)}};
        auto t0 = clock_type::now();
        auto r = client.rpc("session.create", p);
        auto us =
            std::chrono::duration<double, std::micro>(clock_type::now() - t0)
                .count();
        if (r.status != 200)
          ++failures;
        per_thread[t].push_back(us);
      }
    });
  for (auto& th : threads)
    th.join();
  auto seconds =
      std::chrono::duration<double>(clock_type::now() - start).count();
  std::vector<double> all;
  for (auto& v : per_thread)
    all.insert(all.end(), v.begin(), v.end());
  auto o = summarize(std::move(all), seconds);
  o["what"] = "session.create";
  o["connections"] = connections;
  o["failures"] = failures.load();
  std::cout << json::serialize(o) << std::endl;
  return failures.load() == 0 ? 0 : 1;
}

/// Latency of one action repeated on one session over one connection.
/// `rollback` alternates between the given checkpoints.
int repeat_action(const std::string& host, uint16_t port,
                  const std::string& action, const std::string& agent,
                  const std::string& session, size_t count,
                  const std::vector<std::string>& targets,
                  const std::string& label) {
  test::http_client client{host, port};
  std::vector<double> micros;
  size_t failures = 0;
  auto start = clock_type::now();
  for (size_t i = 0; i < count; ++i) {
    json::object p{{"agent_id", agent}, {"session_id", session}};
    if (action == "session.rollback")
      p["checkpoint_id"] = targets[i % targets.size()];
    if (action == "checkpoint.diff") {
      p["from"] = targets.at(0);
      p["to"] = targets.at(1);
    }
    auto t0 = clock_type::now();
    auto r = client.rpc(action, p);
    micros.push_back(
        std::chrono::duration<double, std::micro>(clock_type::now() - t0)
            .count());
    if (r.status != 200) {
      if (failures++ == 0)
        std::cerr << action << " failed: " << r.body << "\n";
    }
  }
  auto seconds =
      std::chrono::duration<double>(clock_type::now() - start).count();
  auto o = summarize(std::move(micros), seconds);
  o["what"] = label.empty() ? action : label;
  o["failures"] = failures;
  std::cout << json::serialize(o) << std::endl;
  return failures == 0 ? 0 : 1;
}

/// Diff of two snapshots in-process: the generation search (given the
/// common ancestor's snapshot) next to the full walk of both trees.
int tree_diff(const std::string& from, const std::string& to,
              const std::string& ancestor, size_t count) {
  auto base = static_cast<uint64_t>(store::snapshot_generation(ancestor));
  for (auto method : {"generation", "walk"}) {
    std::vector<double> micros;
    size_t changes = 0;
    os::diff_stats stats;
    auto start = clock_type::now();
    for (size_t i = 0; i < count; ++i) {
      stats = {};
      auto t0 = clock_type::now();
      auto r = std::string{method} == "walk"
                   ? os::diff_walk(from, to, &stats)
                   : os::diff_trees(from, to, base, &stats);
      micros.push_back(
          std::chrono::duration<double, std::micro>(clock_type::now() - t0)
              .count());
      if (!r) {
        std::cerr << message_of(r.error()) << "\n";
        return 1;
      }
      changes = r->size();
    }
    auto seconds =
        std::chrono::duration<double>(clock_type::now() - start).count();
    auto o = summarize(std::move(micros), seconds);
    o["what"] = std::string{"diff by "} + method;
    o["changes"] = changes;
    o["listed_dirs"] = stats.listed_dirs;
    o["compared_paths"] = stats.compared_paths;
    std::cout << json::serialize(o) << std::endl;
  }
  return 0;
}

int raw_subvolumes(const std::string& dir, size_t count) {
  if (auto err = os::ensure_managed_dir(dir, 0755, "bench directory")) {
    std::cerr << message_of(err) << "\n";
    return 1;
  }
  std::vector<double> micros;
  auto start = clock_type::now();
  for (size_t i = 0; i < count; ++i) {
    auto t0 = clock_type::now();
    auto session = dir + "/s" + std::to_string(i);
    ::mkdir(session.c_str(), 0755);
    ::mkdir((session + "/checkpoints").c_str(), 0755);
    if (auto err = os::create_subvolume(session + "/current")) {
      std::cerr << message_of(err) << "\n";
      return 1;
    }
    ::mkdir((session + "/current/.allox-tmp").c_str(), 0700);
    os::fsync_dir(dir);
    micros.push_back(
        std::chrono::duration<double, std::micro>(clock_type::now() - t0)
            .count());
  }
  auto seconds =
      std::chrono::duration<double>(clock_type::now() - start).count();
  auto o = summarize(std::move(micros), seconds);
  o["what"] = "raw subvolume create";
  std::cout << json::serialize(o) << std::endl;
  return 0;
}

/// The per-run checks of a session's logs at its share, then the raw
/// directory and logs of a run, `count` times each, interleaved.
int run_logs(const std::string& dir, size_t count) {
  auto fail = [](const caf::error& err) {
    std::cerr << message_of(err) << "\n";
    return 1;
  };
  if (auto err = os::enable_quotas(dir, true))
    return fail(err);
  auto logs = dir + "/sessions/bench/s";
  if (auto err = store::ensure_output_dir(logs, true))
    return fail(err);
  if (auto err = os::limit_subvolume(logs, uint64_t{1} << 30))
    return fail(err);
  std::vector<double> checks, raw;
  auto us = [](clock_type::time_point a, clock_type::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
  };
  auto start = clock_type::now();
  for (size_t i = 0; i < count; ++i) {
    auto t0 = clock_type::now();
    if (auto err = store::ensure_output_dir(logs, true))
      return fail(err);
    auto room = store::output_room(logs);
    auto t1 = clock_type::now();
    if (room <= 0)
      return fail(make_error(errc::no_space, "no room in " + logs));
    auto run = logs + "/r" + std::to_string(i);
    ::mkdir(run.c_str(), 0700);
    for (const char* name : {"/stdout.log", "/stderr.log", "/exit"})
      ::close(
          ::open((run + name).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    auto t2 = clock_type::now();
    checks.push_back(us(t0, t1));
    raw.push_back(us(t1, t2));
  }
  auto seconds =
      std::chrono::duration<double>(clock_type::now() - start).count();
  auto a = summarize(std::move(checks), seconds);
  a["what"] = "the logs' checks of a run start (share on)";
  std::cout << json::serialize(a) << std::endl;
  auto b = summarize(std::move(raw), seconds);
  b["what"] = "raw: a run's directory and three log files";
  std::cout << json::serialize(b) << std::endl;
  return 0;
}

/// Times os::read_counters of `group`, `count` times.
int read_counters(const std::string& group, size_t count) {
  std::vector<double> micros;
  micros.reserve(count);
  auto t0 = clock_type::now();
  for (size_t i = 0; i < count; ++i) {
    auto t = clock_type::now();
    auto c = os::read_counters(group);
    micros.push_back(
        std::chrono::duration<double, std::micro>(clock_type::now() - t)
            .count());
    if (!c.present) {
      std::cerr << "no cgroup at " << group << "\n";
      return 1;
    }
  }
  auto o =
      summarize(std::move(micros),
                std::chrono::duration<double>(clock_type::now() - t0).count());
  o["group"] = group;
  std::cout << json::serialize(o) << std::endl;
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Allox OS benchmark helper"};
  app.require_subcommand(1);
  std::string host = "127.0.0.1";
  uint16_t port = 8092;
  size_t count = 1000, connections = 1, agents = 1;
  std::string prefix, dir;
  auto* create = app.add_subcommand("create", "session.create load");
  create->add_option("--host", host);
  create->add_option("--port", port)->required();
  create->add_option("--count", count);
  create->add_option("--connections", connections);
  create->add_option("--agents", agents);
  create->add_option("--prefix", prefix, "id prefix, to run several times");
  std::string action, agent = "bench", session = "s", label;
  std::vector<std::string> targets;
  auto* repeat = app.add_subcommand("repeat", "one action, repeated");
  repeat->add_option("--host", host);
  repeat->add_option("--port", port)->required();
  repeat->add_option("--action", action)->required();
  repeat->add_option("--agent", agent);
  repeat->add_option("--session", session);
  repeat->add_option("--count", count);
  repeat->add_option("--target", targets, "rollback targets / diff pair");
  repeat->add_option("--label", label);
  std::string from, to, ancestor;
  auto* diff = app.add_subcommand("treediff", "generation search vs walk");
  diff->add_option("--from", from)->required();
  diff->add_option("--to", to)->required();
  diff->add_option("--ancestor", ancestor)->required();
  diff->add_option("--count", count);
  auto* raw = app.add_subcommand("subvolumes", "raw baseline");
  raw->add_option("--dir", dir)->required();
  raw->add_option("--count", count);
  auto* logs = app.add_subcommand("run-logs", "a run's logs at the share");
  logs->add_option("--dir", dir)->required();
  logs->add_option("--count", count);
  std::string group;
  auto* counters = app.add_subcommand("counters", "cgroup counter reads");
  counters->add_option("--group", group)->required();
  counters->add_option("--count", count);
  CLI11_PARSE(app, argc, argv);
  if (*counters)
    return read_counters(group, count);
  if (*logs)
    return run_logs(dir, count);
  if (*create)
    return create_sessions(host, port, count, std::max<size_t>(1, connections),
                           std::max<size_t>(1, agents), prefix);
  if (*diff)
    return tree_diff(from, to, ancestor, count);
  if (*repeat)
    return repeat_action(host, port, action, agent, session, count, targets,
                         label);
  return raw_subvolumes(dir, count);
}
