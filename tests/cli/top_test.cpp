// SPDX-License-Identifier: Apache-2.0
// alloxctl session top: one sample of every session's usage, CPU measured
// over the interval from the session cgroup's cpu.stat.
#include "tests/cli/ctl.hpp"
#include "tests/fixtures/daemon.hpp"

#include <doctest/doctest.h>

using namespace allox;
using namespace allox::test;

TEST_CASE("session top: every session's CPU, memory, runs and disk, once") {
  daemon_process d{with_execution()};
  d.start();
  ctl_process c{"http://127.0.0.1:" + std::to_string(d.port())};
  REQUIRE(c.run({"session", "create", "--agent", "a", "busy"}).code == 0);
  REQUIRE(c.run({"session", "create", "--agent", "b", "idle"}).code == 0);
  auto run = d.client().rpc(
      "process.start",
      {{"agent_id", "a"},
       {"session_id", "busy"},
       {"argv", json::array{"sh", "-c", "while :; do :; done"}}});
  REQUIRE(run.status == 200);
  auto r =
      c.run({"session", "top", "--once", "--interval", "0.5", "-o", "json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  auto rows = json::parse(r.out).as_array();
  REQUIRE(rows.size() == 2);
  const auto& busy = rows[0].as_object();
  CHECK(busy.at("session") == json::value("a/busy"));
  CHECK(busy.at("runs") == json::value(1));
  REQUIRE(busy.at("cpu_pct").is_number());
  CHECK(busy.at("cpu_pct").to_number<double>() > 10);
  CHECK(busy.at("disk_bytes").is_int64());
  // OOM kills and refused forks: null where the controllers are missing.
  CHECK(busy.contains("oom_kills"));
  CHECK(busy.contains("pids_refused"));
  const auto& idle = rows[1].as_object();
  CHECK(idle.at("session") == json::value("b/idle"));
  CHECK(idle.at("cpu_pct").to_number<double>() < 5);
  auto one = c.run({"session", "top", "--once", "--interval", "0.2", "--agent",
                    "b", "-o", "json"});
  REQUIRE(one.code == 0);
  CHECK(json::parse(one.out).as_array().size() == 1);
  auto table = c.run({"session", "top", "--once", "--interval", "0.2"});
  CHECK(table.code == 0);
  CHECK(table.out.find("CPU%") != std::string::npos);
  CHECK(table.out.find("REFUSED") != std::string::npos);
  CHECK(table.out.find("a/busy") != std::string::npos);
  CHECK(c.run({"session", "top", "--once", "--interval", "0"}).code == 2);
  d.client().rpc("process.stop",
                 {{"agent_id", "a"},
                  {"session_id", "busy"},
                  {"run_id", run.json.at("result").at("run_id")}});
}
