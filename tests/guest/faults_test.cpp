// SPDX-License-Identifier: Apache-2.0
#include "guest/faults.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace allox;

TEST_CASE("faults: parsing follows the build") {
  auto p =
      json::parse(R"({"point":"x","effect":"delay","millis":5})").as_object();
  auto f = parse_fault(p);
  if (!fault_injection_enabled()) {
    REQUIRE_FALSE(f);
    CHECK(code_of(f.error()) == errc::unsupported);
    return;
  }
  REQUIRE(f);
  CHECK(f->millis == 5);
  auto bad = json::parse(R"({"point":"x","effect":"explode"})").as_object();
  CHECK_FALSE(parse_fault(bad));
}

TEST_CASE("faults: take moves matching faults - each fires once") {
  if (!fault_injection_enabled())
    return;
  fault_set armed;
  armed.arm({"session.delete.before_rename", "delay", 30});
  armed.arm({"session.create.x", "throw", 0});
  auto taken = armed.take("session.delete");
  CHECK_FALSE(taken.empty());
  CHECK_FALSE(armed.empty());
  auto start = std::chrono::steady_clock::now();
  taken.trigger("session.delete.before_rename");
  CHECK(std::chrono::steady_clock::now() - start >=
        std::chrono::milliseconds{30});
  CHECK(taken.empty());
  CHECK_THROWS(armed.trigger("session.create.x"));
  CHECK_NOTHROW(armed.trigger("session.create.x"));
}
