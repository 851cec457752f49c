// SPDX-License-Identifier: Apache-2.0
#include "messages/ids.hpp"

#include <doctest/doctest.h>

using namespace allox;

TEST_CASE("ids: the prototype's rule") {
  CHECK(is_valid_id("a"));
  CHECK(is_valid_id("A1_b.c-d"));
  CHECK(is_valid_id(std::string(64, 'x')));
  CHECK_FALSE(is_valid_id(""));
  CHECK_FALSE(is_valid_id("../escape"));
  CHECK_FALSE(is_valid_id("/absolute"));
  CHECK_FALSE(is_valid_id("has space"));
  CHECK_FALSE(is_valid_id(std::string(65, 'x')));
  CHECK_FALSE(is_valid_id(".hidden"));
  CHECK_FALSE(is_valid_id("-dash"));
  CHECK_FALSE(is_valid_id("a/b"));
  CHECK_FALSE(is_valid_id(std::string("a\0b", 3)));
}

TEST_CASE("ids: validation message names kind and value") {
  auto err = validate_id("session", "has space");
  REQUIRE(err);
  CHECK(code_of(err) == errc::invalid_argument);
  CHECK(message_of(err) == "invalid session id: 'has space'");
  CHECK_FALSE(validate_id("agent", "ok"));
}

TEST_CASE("ids: random tokens are 32 lowercase hex digits and differ") {
  auto a = random_hex_token();
  auto b = random_hex_token();
  CHECK(a.size() == 32);
  CHECK(a.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(a != b);
}
