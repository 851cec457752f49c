// SPDX-License-Identifier: Apache-2.0
#include "guest/http/server.hpp"

#include <doctest/doctest.h>

using namespace allox;

TEST_CASE("listen: HOST:PORT split at the last colon") {
  auto v4 = http::parse_listen("127.0.0.1:8092");
  REQUIRE(v4);
  CHECK(v4->first == "127.0.0.1");
  CHECK(v4->second == 8092);
  auto v6 = http::parse_listen("[::1]:9000");
  REQUIRE(v6);
  CHECK(v6->first == "::1");
  CHECK(v6->second == 9000);
  for (auto bad : {"nohost", ":80", "host:", "h:70000", "h:12x"})
    CHECK_FALSE(http::parse_listen(bad));
}

TEST_CASE("listen: loopback hosts") {
  CHECK(http::is_loopback_host("127.0.0.1"));
  CHECK(http::is_loopback_host("::1"));
  CHECK(http::is_loopback_host("localhost"));
  CHECK_FALSE(http::is_loopback_host("0.0.0.0"));
  CHECK_FALSE(http::is_loopback_host("10.0.0.1"));
}

TEST_CASE("token: exact bearer match only") {
  CHECK(http::token_matches("Bearer s3cret", "s3cret"));
  CHECK_FALSE(http::token_matches("Bearer s3cre", "s3cret"));
  CHECK_FALSE(http::token_matches("Bearer s3creT", "s3cret"));
  CHECK_FALSE(http::token_matches("bearer s3cret", "s3cret"));
  CHECK_FALSE(http::token_matches("", "s3cret"));
}
