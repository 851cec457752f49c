// SPDX-License-Identifier: Apache-2.0
// Races that only show under concurrent load: requests against a session
// that is being deleted and re-created, and sibling sessions whose runs
// create and remove cgroups under the same agent. Each runs for a bounded
// time and checks that nothing answered `internal` and no actor restarted.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/session_files.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

using namespace allox;
using namespace allox::test;

namespace {

using clock_type = std::chrono::steady_clock;

/// Tallies answers by `code` (or "ok") across threads.
class tally {
public:
  void add(const http_response& r) {
    std::string key = "transport";
    if (r.status == 200)
      key = "ok";
    else if (r.json.is_object())
      if (auto* code = r.json.as_object().if_contains("code");
          code && code->is_string())
        key = std::string{code->get_string()};
    std::lock_guard<std::mutex> guard{mtx_};
    ++counts_[key];
    if (key == "internal" || key == "transport")
      bad_.push_back(r.body);
  }

  size_t count(const std::string& key) {
    std::lock_guard<std::mutex> guard{mtx_};
    return counts_[key];
  }

  std::string bad_answers() {
    std::lock_guard<std::mutex> guard{mtx_};
    std::string out;
    for (size_t i = 0; i < bad_.size() && i < 5; ++i)
      out += bad_[i] + "\n";
    return out;
  }

private:
  std::mutex mtx_;
  std::map<std::string, size_t> counts_;
  std::vector<std::string> bad_;
};

/// Sum of every `restarts` counter in the system.dump tree.
int64_t restarts_in(const json::value& node) {
  int64_t n = 0;
  if (auto* obj = node.if_object()) {
    if (auto* counters = obj->if_contains("counters"))
      if (auto* r = counters->as_object().if_contains("restarts"))
        n += r->to_number<int64_t>();
    for (const auto& kv : *obj)
      n += restarts_in(kv.value());
  } else if (auto* arr = node.if_array()) {
    for (const auto& v : *arr)
      n += restarts_in(v);
  }
  return n;
}

} // namespace

TEST_CASE("load: requests racing session.delete get conflict or not_found, "
          "and no actor fails") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto deadline = clock_type::now() + std::chrono::seconds{6};
  tally answers;
  std::atomic<size_t> cycles{0};
  std::vector<std::thread> threads;
  // Threads never throw (try_rpc): a transport failure is counted and
  // reported, not an abort of the whole test binary.
  // One client deletes and re-creates the session as fast as it can.
  threads.emplace_back([&] {
    auto c = d.new_client();
    while (clock_type::now() < deadline) {
      answers.add(c->try_rpc("session.delete", ids("a", "s")));
      answers.add(c->try_rpc("session.create", ids("a", "s")));
      ++cycles;
    }
  });
  // The others use the session meanwhile, each with its own connection.
  const std::vector<std::pair<std::string, json::object>> work{
      {"checkpoint.create", with(ids("a", "s"), {{"message", "m"}})},
      {"checkpoint.list", ids("a", "s")},
      {"session.describe", ids("a", "s")},
      {"session.rollback", ids("a", "s")},
  };
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      auto c = d.new_client();
      for (size_t i = t; clock_type::now() < deadline; ++i) {
        const auto& [action, params] = work[i % work.size()];
        answers.add(c->try_rpc(action, params));
      }
    });
  for (auto& t : threads)
    t.join();
  INFO("answers that should not happen:\n" << answers.bad_answers());
  CHECK(cycles > 20);
  CHECK(answers.count("ok") > 100);
  CHECK(answers.count("internal") == 0);
  CHECK(answers.count("transport") == 0);
  auto dump = expect_ok(d.client().rpc("system.dump"));
  CHECK(restarts_in(dump.at("tree")) == 0);
  CHECK(d.log().find("session.actor_failed") == std::string::npos);
  CHECK(d.log().find("request failed") == std::string::npos);
  CHECK(d.log().find(" failed in ") == std::string::npos);
}

TEST_CASE("load: sibling sessions running at once never lose a cgroup to "
          "each other's clean-up") {
  daemon_process d{with_execution()};
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s1")));
  expect_ok(d.client().rpc("session.create", ids("a", "s2")));
  auto deadline = clock_type::now() + std::chrono::seconds{20};
  std::atomic<size_t> runs{0};
  std::mutex mtx;
  std::vector<std::string> failed;
  auto loop = [&](const std::string& sid) {
    auto c = d.new_client();
    for (int i = 0; i < 150 && clock_type::now() < deadline; ++i) {
      auto r = c->rpc("process.start",
                      with(ids("a", sid), {{"argv", json::array{"true"}}}));
      if (r.status != 200) {
        std::lock_guard<std::mutex> guard{mtx};
        failed.push_back(r.body);
        continue;
      }
      auto id = r.json.as_object().at("result").as_object().at("run_id");
      for (;;) {
        auto row = expect_ok(
            c->rpc("process.get", with(ids("a", sid), {{"run_id", id}})));
        auto state = row.at("state");
        if (state == "starting" || state == "running") {
          std::this_thread::sleep_for(std::chrono::milliseconds{1});
          continue;
        }
        if (state != "completed" || row.at("root_exit_code") != 0) {
          std::lock_guard<std::mutex> guard{mtx};
          failed.push_back(json::serialize(row));
        }
        break;
      }
      ++runs;
    }
  };
  std::thread t1{loop, "s1"};
  std::thread t2{loop, "s2"};
  t1.join();
  t2.join();
  INFO("first failures: " << (failed.empty() ? "" : failed.front()));
  CHECK(runs >= 100);
  CHECK(failed.empty());
}

TEST_CASE("load: memory stays flat over many requests") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto rss = [&] {
    auto text = read_file("/proc/" + std::to_string(d.pid()) + "/status");
    return std::stol(text.substr(text.find("VmRSS:") + 6));
  };
  auto burst = [&](int per_thread) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        auto c = d.new_client();
        for (int i = 0; i < per_thread; ++i)
          expect_ok(i % 2 == t % 2 ? c->rpc("agent.list")
                                   : c->rpc("session.describe", ids("a", "s")));
      });
    for (auto& t : threads)
      t.join();
  };
  burst(5000); // warm-up: caches, arenas, connection buffers
  auto before = rss();
  burst(20000);
  auto growth_kib = rss() - before;
  INFO("RSS growth over 80,000 requests: " << growth_kib << " KiB");
  // Each request used to leave ~200 bytes behind for five minutes.
  if (resource_bounds_apply)
    CHECK(growth_kib < 3 * 1024);
}
