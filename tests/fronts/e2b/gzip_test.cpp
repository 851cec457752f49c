// SPDX-License-Identifier: Apache-2.0
// gzip of /files: round trips piece by piece, concatenated members, cut and
// foreign bodies, a body that inflates past the limit, Accept-Encoding.
#include "fronts/e2b/gzip.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace allox;
using namespace allox::e2b;

namespace {

std::string gzip_of(const std::string& text, size_t piece = 1000) {
  gzip_writer w;
  std::string out;
  for (size_t at = 0; at < text.size(); at += piece)
    out += w.write(std::string_view{text}.substr(at, piece),
                   at + piece >= text.size());
  if (text.empty())
    out += w.write({}, true);
  return out;
}

} // namespace

TEST_CASE("e2b gzip: written piece by piece, inflated whole") {
  std::string text;
  for (int i = 0; i < 100000; ++i)
    text += std::to_string(i * 7919 % 1000) + ",";
  auto packed = gzip_of(text);
  CHECK(packed.size() < text.size() / 2);
  CHECK(packed.substr(0, 2) == "\x1f\x8b");
  auto back = gunzip(packed, text.size());
  REQUIRE(back);
  CHECK(*back == text);
  auto empty = gunzip(gzip_of(""), 10);
  REQUIRE(empty);
  CHECK(empty->empty());
  // gzip files concatenated are one stream of their contents.
  auto two = gunzip(gzip_of("one ") + gzip_of("two"), 100);
  REQUIRE(two);
  CHECK(*two == "one two");
}

TEST_CASE("e2b gzip: cut, foreign and inflating past the limit are refused") {
  auto packed = gzip_of(std::string(1 << 20, 'a'));
  auto cut = gunzip(packed.substr(0, packed.size() / 2), 2 << 20);
  REQUIRE_FALSE(cut);
  CHECK(code_of(cut.error()) == errc::invalid_argument);
  auto foreign = gunzip("plain text", 100);
  REQUIRE_FALSE(foreign);
  CHECK(code_of(foreign.error()) == errc::invalid_argument);
  // A megabyte of one letter is a kilobyte of gzip: the limit is on the
  // inflated size.
  auto bomb = gunzip(packed, 1000);
  REQUIRE_FALSE(bomb);
  CHECK(code_of(bomb.error()) == errc::payload_too_large);
}

TEST_CASE("e2b gzip: Accept-Encoding") {
  CHECK(accepts_gzip("gzip"));
  CHECK(accepts_gzip("br, gzip;q=0.5, deflate"));
  CHECK_FALSE(accepts_gzip(""));
  CHECK_FALSE(accepts_gzip("identity"));
  CHECK_FALSE(accepts_gzip("gzip;q=0"));
  CHECK_FALSE(accepts_gzip("x-gzip"));
}
