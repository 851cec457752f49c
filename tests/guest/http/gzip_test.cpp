// SPDX-License-Identifier: Apache-2.0
// gzip as a streamed content coding: round trips piece by piece,
// concatenated members, cut and foreign bodies, a body that inflates past
// the limit, Accept-Encoding, and which downloads are worth deflating.
#include "guest/http/gzip.hpp"

#include "guest/os/unique_fd.hpp"

#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <random>
#include <string>

using namespace allox;
using namespace allox::http;

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

/// Inflates `packed`, handed to the reader `piece` bytes at a time.
expected<std::string> gunzip(const std::string& packed, uint64_t limit,
                             size_t piece = 777) {
  size_t at = 0;
  gunzip_source source{[&](std::string_view& bytes) -> expected<bool> {
                         if (at == packed.size())
                           return false;
                         bytes = std::string_view{packed}.substr(at, piece);
                         at += bytes.size();
                         return true;
                       },
                       limit};
  std::string out;
  std::string_view bytes;
  for (;;) {
    auto more = source.pull(bytes);
    if (!more)
      return more.error();
    if (!*more)
      return out;
    out.append(bytes);
  }
}

} // namespace

TEST_CASE("gzip: written piece by piece, inflated as it streams") {
  std::string text;
  for (int i = 0; i < 100000; ++i)
    text += std::to_string(i * 7919 % 1000) + ",";
  auto packed = gzip_of(text);
  CHECK(packed.size() < text.size() / 2);
  CHECK(packed.substr(0, 2) == "\x1f\x8b");
  auto back = gunzip(packed, text.size());
  REQUIRE(back);
  CHECK(*back == text);
  auto whole = gunzip(packed, text.size(), packed.size());
  REQUIRE(whole);
  CHECK(*whole == text);
  auto bytewise = gunzip(gzip_of("byte by byte"), 100, 1);
  REQUIRE(bytewise);
  CHECK(*bytewise == "byte by byte");
  auto empty = gunzip(gzip_of(""), 10);
  REQUIRE(empty);
  CHECK(empty->empty());
  // gzip files concatenated are one stream of their contents.
  auto two = gunzip(gzip_of("one ") + gzip_of("two"), 100);
  REQUIRE(two);
  CHECK(*two == "one two");
}

TEST_CASE("gzip: cut, foreign and inflating past the limit are refused") {
  auto packed = gzip_of(std::string(1 << 20, 'a'));
  auto cut = gunzip(packed.substr(0, packed.size() / 2), 2 << 20);
  REQUIRE_FALSE(cut);
  CHECK(code_of(cut.error()) == errc::invalid_argument);
  auto foreign = gunzip("plain text", 100);
  REQUIRE_FALSE(foreign);
  CHECK(code_of(foreign.error()) == errc::invalid_argument);
  auto nothing = gunzip("", 100);
  REQUIRE_FALSE(nothing);
  CHECK(code_of(nothing.error()) == errc::invalid_argument);
  // A megabyte of one letter is a kilobyte of gzip: the limit is on the
  // inflated size.
  auto bomb = gunzip(packed, 1000);
  REQUIRE_FALSE(bomb);
  CHECK(code_of(bomb.error()) == errc::payload_too_large);
}

TEST_CASE("gzip: Accept-Encoding") {
  CHECK(accepts_gzip("gzip"));
  CHECK(accepts_gzip("br, gzip;q=0.5, deflate"));
  CHECK_FALSE(accepts_gzip(""));
  CHECK_FALSE(accepts_gzip("identity"));
  CHECK_FALSE(accepts_gzip("gzip;q=0"));
  CHECK_FALSE(accepts_gzip("x-gzip"));
}

TEST_CASE("gzip: a download is deflated when that pays") {
  auto file_of = [](const std::string& bytes) {
    os::unique_fd fd{::memfd_create("gzip-test", MFD_CLOEXEC)};
    REQUIRE(fd);
    REQUIRE(::write(fd.get(), bytes.data(), bytes.size()) ==
            static_cast<ssize_t>(bytes.size()));
    return fd;
  };
  std::mt19937_64 rng{7};
  std::string noise(1 << 20, '\0');
  for (auto& c : noise)
    c = static_cast<char>(rng());
  std::string text;
  while (text.size() < noise.size())
    text += "compress me ";
  // Large and random (or compressed already): sent as it is.
  auto random_file = file_of(noise);
  CHECK_FALSE(worth_gzip(random_file.get(), noise.size()));
  // Large and repetitive: deflated.
  auto text_file = file_of(text);
  CHECK(worth_gzip(text_file.get(), text.size()));
  // Small: deflated whatever it holds, the sample would cost as much.
  auto small = file_of(noise.substr(0, 4096));
  CHECK(worth_gzip(small.get(), 4096));
}
