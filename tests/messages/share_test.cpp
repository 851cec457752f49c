// SPDX-License-Identifier: Apache-2.0
// The pure parts of share.*: the path rules, strict base64 and the policy
// as the catalog keeps it (messages/share.hpp).
#include "messages/share.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace allox;
using namespace std::string_literals;

TEST_CASE("share: paths are relative POSIX paths without dot components") {
  using parts = std::vector<std::string>;
  CHECK(*split_share_path(".") == parts{});
  CHECK(*split_share_path("a") == parts{"a"});
  CHECK(*split_share_path("a/b.c/..d") == parts{"a", "b.c", "..d"});
  for (auto bad : {"/etc/passwd", "../x", "x/../../y", "a//b", "./x", "a/.",
                   "a/", "/", ".."}) {
    CAPTURE(bad);
    auto r = split_share_path(bad);
    REQUIRE_FALSE(r);
    CHECK(message_of(r.error()) ==
          "absolute paths and dot components are not allowed");
  }
  for (auto bad : {""s, "a\\b"s, "a\0b"s, std::string(4097, 'x')}) {
    auto r = split_share_path(bad);
    REQUIRE_FALSE(r);
    CHECK(message_of(r.error()) == "path must be a relative POSIX path");
  }
}

TEST_CASE("share: base64 is strict and round-trips every byte") {
  std::string all;
  for (int i = 0; i < 256; ++i)
    all.push_back(static_cast<char>(i));
  for (size_t n : {0, 1, 2, 3, 4, 255, 256}) {
    auto text = encode_base64(all.substr(0, n));
    std::string back;
    REQUIRE(decode_base64_strict(text, back));
    CHECK(back == all.substr(0, n));
  }
  CHECK(encode_base64("hi") == "aGk=");
  std::string out;
  for (auto bad : {"abc", "ab!=", "a===", "=abc", "ab=c", "YQ==YQ==", "YWJj\n",
                   "YW Jj", "YWJj===="}) {
    CAPTURE(bad);
    CHECK_FALSE(decode_base64_strict(bad, out));
  }
  CHECK(message_of(decode_share_data("abc").error()) == "invalid base64 data");
  CHECK(*decode_share_data(encode_base64(std::string(share_max_file, 'x'))) ==
        std::string(share_max_file, 'x'));
  auto over =
      decode_share_data(encode_base64(std::string(share_max_file + 1, 'x')));
  REQUIRE_FALSE(over);
  CHECK(code_of(over.error()) == errc::payload_too_large);
  CHECK(message_of(over.error()) == "write requires base64 data up to 256 KiB");
}

TEST_CASE("share: a policy's catalog text, with defaults for anything "
          "missing or malformed") {
  auto d = parse_share_policy(caf::none);
  CHECK_FALSE(d.enabled);
  CHECK(d.scope == ".");
  CHECK(d.permission == "read");
  share_policy p{true, "pub/x", "write"};
  auto back = parse_share_policy(serialize_share_policy(p));
  CHECK(back.enabled);
  CHECK(back.scope == "pub/x");
  CHECK(back.permission == "write");
  auto odd = parse_share_policy(
      R"({"enabled":"yes","scope":"../x","permission":"all"})"s);
  CHECK_FALSE(odd.enabled);
  CHECK(odd.scope == ".");
  CHECK(odd.permission == "read");
  CHECK_FALSE(parse_share_policy("not json"s).enabled);
}
