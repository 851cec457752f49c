// SPDX-License-Identifier: Apache-2.0
// The query helpers every front shares: percent-decoding and parameters.
#include "fronts/query.hpp"

#include <doctest/doctest.h>

using namespace allox;

TEST_CASE("fronts query: parameters are found, decoded, and malformed "
          "ones read as absent") {
  CHECK(fronts::query_param("agent=a&session=s", "session") == "s");
  CHECK(fronts::query_param("agent=a&session=s", "agent") == "a");
  CHECK(fronts::query_param("agent=a", "session").empty());
  CHECK(fronts::query_param("", "x").empty());
  CHECK(fronts::query_param("flag&x=1", "flag").empty());
  CHECK(fronts::query_param("path=%2Fhome%2Fuser+a&x=1", "path") ==
        "/home/user a");
  CHECK(fronts::query_param("a%3Db=c", "a=b") == "c");
  CHECK(fronts::query_param("x=%zz", "x").empty());
  std::string out;
  CHECK(fronts::percent_decode("a+b%20c", out));
  CHECK(out == "a+b c");
  CHECK_FALSE(fronts::percent_decode("%4", out));
}
