// SPDX-License-Identifier: Apache-2.0
#include "messages/params.hpp"
#include "tests/fixtures/json_text.hpp"

#include <doctest/doctest.h>

using namespace allox;
using allox::test::obj;

TEST_CASE("params: required strings") {
  auto p = obj(R"({"a":"x","empty":"","num":3})");
  CHECK(*params::required_string(p, "a") == "x");
  for (auto name : {"empty", "num", "missing"}) {
    auto r = params::required_string(p, name);
    REQUIRE_FALSE(r);
    CHECK(message_of(r.error()) ==
          "missing string parameter: " + std::string{name});
  }
}

TEST_CASE("params: ids are validated after the string check") {
  auto p = obj(R"({"agent_id":"../x"})");
  auto r = params::required_id(p, "agent_id", "agent");
  REQUIRE_FALSE(r);
  CHECK(message_of(r.error()) == "invalid agent id: '../x'");
}

TEST_CASE("params: booleans must be JSON booleans") {
  auto p = obj(R"({"t":true,"s":"true","n":null})");
  CHECK(*params::optional_bool(p, "t", false));
  CHECK_FALSE(*params::optional_bool(p, "missing", false));
  CHECK(*params::optional_bool(p, "n", true));
  auto r = params::optional_bool(p, "s", false);
  REQUIRE_FALSE(r);
  CHECK(message_of(r.error()) == "s must be a boolean");
}

TEST_CASE("params: integers reject booleans and fractions") {
  auto p = obj(R"({"i":3,"b":true,"f":1.5})");
  CHECK(*params::optional_int(p, "i", 0) == 3);
  CHECK(*params::optional_int(p, "missing", 7) == 7);
  CHECK_FALSE(params::optional_int(p, "b", 0));
  CHECK_FALSE(params::optional_int(p, "f", 0));
}

TEST_CASE("params: origin defaults and stringifies") {
  CHECK(params::origin(obj("{}")) == "allox-control-plane");
  CHECK(params::origin(obj(R"({"origin":""})")) == "allox-control-plane");
  CHECK(params::origin(obj(R"({"origin":"cli"})")) == "cli");
  CHECK(params::origin(obj(R"({"origin":42})")) == "42");
}
