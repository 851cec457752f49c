// SPDX-License-Identifier: Apache-2.0
// The runtime facet's results and their native JSON, key for key.
#include "messages/results/runtime_json.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace allox;

TEST_CASE("runtime results: leases, background executions and a completed "
          "reset") {
  CHECK(json::serialize(to_json(lease_granted{"t"})) ==
        R"({"lease_token":"t"})");
  CHECK(json::serialize(to_json(lease_released{false})) ==
        R"({"released":false})");
  CHECK(json::serialize(to_json(background_registered{"e1"})) ==
        R"({"registered":true,"execution_id":"e1"})");
  CHECK(json::serialize(to_json(reset_completed{true})) ==
        R"({"completed":true,"success":true})");
}

TEST_CASE("runtime results: a begun reset lists the killed runs only when "
          "kill_processes was asked for, even when none was killed") {
  reset_begun r;
  r.reset_token = "rt";
  r.executions = {{"sb", "e1"}};
  CHECK(json::serialize(to_json(r)) ==
        R"({"reset_token":"rt","executions":)"
        R"([{"sandbox_id":"sb","execution_id":"e1"}]})");
  r.terminated = true;
  CHECK(json::serialize(to_json(r)) ==
        R"({"reset_token":"rt","executions":)"
        R"([{"sandbox_id":"sb","execution_id":"e1"}],)"
        R"("terminated_process_runs":[]})");
}

TEST_CASE("runtime results: session.unfence names what it cleared, as its "
          "audit record does") {
  unfence_result u{"a", "s", true, 1, 2, {"r-old"}};
  CHECK(json::serialize(to_json(u)) ==
        R"({"agent_id":"a","session_id":"s","unfenced":true,"cleared":)"
        R"({"reset":true,"leases":1,"background_executions":2,)"
        R"("interrupted_runs":["r-old"]}})");
  CHECK(to_json(u).at("cleared") == cleared_json(u));
}
