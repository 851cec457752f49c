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

TEST_CASE("params::reader: reads values when nothing failed") {
  auto p = obj(R"({"s":"x","id":"a","b":true,"i":3,"o":"y","origin":"cli"})");
  params::reader r{p};
  CHECK(r.required_string("s") == "x");
  CHECK(r.required_id("id", "agent") == "a");
  CHECK(r.optional_bool("b", false));
  CHECK(r.optional_int("i", 0) == 3);
  CHECK(r.optional_string("o") == "y");
  CHECK(r.optional_string("missing", "z") == "z");
  CHECK(r.has("s"));
  CHECK_FALSE(r.has("missing"));
  CHECK(r.origin() == "cli");
  CHECK(&r.params() == &p);
  CHECK_FALSE(r.failed());
  CHECK_FALSE(r.error());
}

TEST_CASE("params::reader: the first error is kept") {
  // Both reads fail: the caller sees the first, as an early return gave.
  auto p = obj(R"({"b":"yes","i":"three"})");
  params::reader r{p};
  CHECK_FALSE(r.optional_bool("b", false));
  CHECK(r.failed());
  CHECK(r.optional_int("i", 7) == 7);
  r.check(false, "later check");
  r.fail(make_error(errc::internal, "later failure"));
  REQUIRE(r.failed());
  CHECK(message_of(r.error()) == "b must be a boolean");
  CHECK(code_of(r.error()) == errc::invalid_argument);
}

TEST_CASE("params::reader: reads after an error return their fallback") {
  // Every value is valid, but an earlier read failed.
  auto p = obj(R"({"s":"x","b":false,"i":3,"o":"y"})");
  params::reader r{p};
  CHECK(r.required_string("missing").empty());
  CHECK(r.optional_bool("b", true));
  CHECK(r.optional_int("i", 9) == 9);
  CHECK(r.optional_string("o", "fb") == "fb");
  CHECK(r.optional_string("o").empty());
  // The fields read by hand and origin do not depend on the error.
  CHECK(r.has("s"));
  CHECK(r.origin() == params::default_origin);
  CHECK(message_of(r.error()) == "missing string parameter: missing");
}

TEST_CASE("params::reader: take, check and fail") {
  auto p = obj(R"({})");
  SUBCASE("take gives the value, or a default one with its error kept") {
    params::reader r{p};
    CHECK(r.take(expected<int>{5}) == 5);
    CHECK_FALSE(r.failed());
    CHECK(r.take(expected<int>{make_error(errc::invalid_argument, "t1")}) == 0);
    CHECK(r.take(expected<std::string>{
              make_error(errc::invalid_argument, "t2")}) == "");
    CHECK(message_of(r.error()) == "t1");
  }
  SUBCASE("check keeps an invalid_argument error only when not ok") {
    params::reader r{p};
    r.check(true, "never");
    CHECK_FALSE(r.failed());
    r.check(false, "limit must be 1..10000");
    r.check(false, "second");
    CHECK(message_of(r.error()) == "limit must be 1..10000");
    CHECK(code_of(r.error()) == errc::invalid_argument);
  }
  SUBCASE("fail keeps the error as given, code included") {
    params::reader r{p};
    r.fail(make_error(errc::internal, "f1"));
    r.fail(make_error(errc::invalid_argument, "f2"));
    CHECK(message_of(r.error()) == "f1");
    CHECK(code_of(r.error()) == errc::internal);
  }
  SUBCASE("a read's error after a kept one is dropped") {
    params::reader r{p};
    r.check(false, "first");
    CHECK(r.required_id("agent_id", "agent").empty());
    CHECK(message_of(r.error()) == "first");
  }
}
