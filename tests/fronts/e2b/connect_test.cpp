// SPDX-License-Identifier: Apache-2.0
// The Connect codec of the E2B front: envelopes, end-stream frames, error
// codes and statuses, and the request body of a server-streaming call.
#include "fronts/e2b/connect.hpp"

#include <doctest/doctest.h>

using namespace allox;

TEST_CASE("connect: an envelope is a flag byte, a big-endian length and "
          "the message") {
  auto e = connect::envelope("{\"a\":1}");
  REQUIRE(e.size() == 5 + 7);
  CHECK(e[0] == 0);
  CHECK(e.substr(1, 4) == std::string("\0\0\0\7", 4));
  CHECK(e.substr(5) == "{\"a\":1}");
  std::string big(70000, 'x');
  auto b = connect::envelope(big);
  CHECK(static_cast<uint8_t>(b[2]) == 0x01);
  CHECK(static_cast<uint8_t>(b[3]) == 0x11);
  CHECK(static_cast<uint8_t>(b[4]) == 0x70);
}

TEST_CASE("connect: the end of a stream carries {} or the error") {
  auto ok = connect::end_stream();
  CHECK(static_cast<uint8_t>(ok[0]) == connect::flag_end_stream);
  CHECK(ok.substr(5) == "{}");
  auto failed = connect::end_stream(
      connect::error{connect::code::not_found, "no such process"});
  CHECK(failed.substr(5) ==
        R"({"error":{"code":"not_found","message":"no such process"}})");
}

TEST_CASE("connect: codes map to the protocol's names and HTTP statuses") {
  using connect::code;
  CHECK(connect::name(code::invalid_argument) == "invalid_argument");
  CHECK(connect::name(code::unauthenticated) == "unauthenticated");
  CHECK(connect::http_status(code::not_found) == 404);
  CHECK(connect::http_status(code::unimplemented) == 501);
  CHECK(connect::http_status(code::resource_exhausted) == 429);
  CHECK(connect::http_status(code::canceled) == 499);
  CHECK(connect::http_status(code::failed_precondition) == 400);
  CHECK(connect::code_for(errc::not_found) == code::not_found);
  CHECK(connect::code_for(errc::conflict) == code::failed_precondition);
  auto e = connect::from(make_error(errc::invalid_argument, "bad path"));
  CHECK(e.code == code::invalid_argument);
  CHECK(e.message == "bad path");
}

TEST_CASE("connect: a server-streaming request is exactly one plain "
          "message") {
  auto one = connect::single_message(connect::envelope("{}"));
  REQUIRE(one);
  CHECK(*one == "{}");
  CHECK_FALSE(connect::single_message(""));
  CHECK_FALSE(connect::single_message(std::string("\0\0\0", 3)));
  // Cut mid-frame, two frames, compressed, an end-stream flag.
  auto whole = connect::envelope("{\"x\":1}");
  CHECK_FALSE(connect::single_message(whole.substr(0, whole.size() - 1)));
  CHECK_FALSE(connect::single_message(whole + whole));
  CHECK_FALSE(connect::single_message(
      connect::envelope("{}", connect::flag_compressed)));
  auto cut = connect::single_message(whole.substr(0, 8));
  REQUIRE_FALSE(cut);
  CHECK(message_of(cut.error()).find("cut off") != std::string::npos);
}

TEST_CASE("connect: Connect-Timeout-Ms is 1 to 10 digits") {
  CHECK(connect::parse_timeout("1500") == std::chrono::milliseconds{1500});
  CHECK_FALSE(connect::parse_timeout(""));
  CHECK_FALSE(connect::parse_timeout("0"));
  CHECK_FALSE(connect::parse_timeout("12345678901"));
  CHECK_FALSE(connect::parse_timeout("-5"));
  CHECK_FALSE(connect::parse_timeout("1.5"));
}
