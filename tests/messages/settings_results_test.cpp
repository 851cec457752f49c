// SPDX-License-Identifier: Apache-2.0
// A session's run settings: the catalog text read and written back, the
// daemon's defaults under the session's own, and session.configure's
// native JSON, key for key.
#include "messages/results/settings_json.hpp"

#include <doctest/doctest.h>

using namespace allox;

TEST_CASE("settings: the catalog text round trips, and nothing is none") {
  const char* text = R"({"network":"proxy","egress":{"allow":["a:443"],)"
                     R"("deny":[]},"limits":{"pids.max":"64",)"
                     R"("memory.max":"1G"},"max_runs":4})";
  auto own = parse_own_settings(std::string{text});
  REQUIRE(own.network);
  CHECK(*own.network == "proxy");
  REQUIRE(own.egress);
  CHECK(own.egress->allow == std::vector<std::string>{"a:443"});
  CHECK(own.limits == limit_list{{"pids.max", "64"}, {"memory.max", "1G"}});
  CHECK(own.max_runs == int64_t{4});
  CHECK(serialize_own_settings(own) == std::string{text});
  CHECK_FALSE(serialize_own_settings(own_settings{}));
  CHECK(parse_own_settings(caf::none).empty());
}

TEST_CASE("settings: unreadable text or fields are the defaults") {
  CHECK(parse_own_settings(std::string{"not json"}).empty());
  CHECK(parse_own_settings(std::string{"[1]"}).empty());
  auto own = parse_own_settings(
      std::string{R"({"network":5,"limits":{"pids.max":7,"cpu.max":"max"},)"
                  R"("max_runs":"x"})"});
  CHECK_FALSE(own.network);
  CHECK(own.limits == limit_list{{"cpu.max", "max"}});
  CHECK_FALSE(own.max_runs);
}

TEST_CASE("settings: the session's own over the daemon's defaults, limits "
          "in the order first set") {
  own_settings own;
  set_limit(own.limits, "memory.max", "2G");
  set_limit(own.limits, "cpu.max", "50000 100000");
  set_limit(own.limits, "memory.max", "3G");
  CHECK(own.limits ==
        limit_list{{"memory.max", "3G"}, {"cpu.max", "50000 100000"}});
  auto r = effective_settings(own, "isolated",
                              {{"pids.max", "128"}, {"memory.max", "1G"}});
  CHECK(r.network == "isolated");
  CHECK(r.max_runs == 1);
  CHECK(r.limits == limit_list{{"pids.max", "128"},
                               {"memory.max", "3G"},
                               {"cpu.max", "50000 100000"}});
  clear_limit(r.limits, "pids.max");
  clear_limit(r.limits, "absent");
  CHECK(r.limits ==
        limit_list{{"memory.max", "3G"}, {"cpu.max", "50000 100000"}});
}

TEST_CASE("settings: session.configure's reply") {
  settings_view v{
      "a", "s", {"proxy", {{"a:443"}, {"b"}}, {{"pids.max", "9"}}, 2}};
  CHECK(json::serialize(to_json(v)) ==
        R"({"network":"proxy","egress":{"allow":["a:443"],"deny":["b"]},)"
        R"("limits":{"pids.max":"9"},"max_runs":2,"agent_id":"a",)"
        R"("session_id":"s"})");
  CHECK(json::serialize(
            to_json(settings_view{"a", "s", {"inherit", {}, {}, 1}})) ==
        R"({"network":"inherit","egress":{"allow":[],"deny":[]},)"
        R"("limits":{},"max_runs":1,"agent_id":"a","session_id":"s"})");
}
