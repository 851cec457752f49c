// SPDX-License-Identifier: Apache-2.0
// multipart/form-data read as it streams: parts and their headers, bytes
// that look like a boundary, empty parts, every split of the body into
// reads, a big part through a small buffer, and malformed bodies.
#include "guest/http/form_data.hpp"

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

using namespace allox;
using namespace allox::http;

namespace {

struct read_part {
  form_part head;
  std::string data;
};

/// Reads every part of `body`, handed to the reader `piece` bytes at a
/// time.
expected<std::vector<read_part>> read_form(const std::string& body,
                                           std::string boundary,
                                           size_t piece = 1 << 20) {
  size_t at = 0;
  form_reader form{[&](std::string_view& bytes) -> expected<bool> {
                     if (at == body.size())
                       return false;
                     bytes = std::string_view{body}.substr(at, piece);
                     at += bytes.size();
                     return true;
                   },
                   std::move(boundary)};
  std::vector<read_part> parts;
  for (;;) {
    auto head = form.next();
    if (!head)
      return head.error();
    if (!*head)
      return parts;
    read_part p{std::move(**head), {}};
    std::string_view bytes;
    for (;;) {
      auto more = form.pull(bytes);
      if (!more)
        return more.error();
      if (!*more)
        break;
      p.data.append(bytes);
    }
    parts.push_back(std::move(p));
  }
}

const std::string two_files = "------B\r\n"
                              "Content-Disposition: form-data; name=\"file\"; "
                              "filename=\"/home/user/a.txt\"\r\n"
                              "Content-Type: application/octet-stream\r\n\r\n"
                              "hello\r\n--with CRLF inside\r\n"
                              "------B\r\n"
                              "Content-Disposition: form-data; name=\"file\"; "
                              "filename=\"b.txt\"\r\n\r\n"
                              "\r\n"
                              "------B--\r\n";

} // namespace

TEST_CASE("form data: the boundary of a Content-Type") {
  auto boundary = form_boundary(
      "multipart/form-data; boundary=----formdata-undici-024597830145");
  REQUIRE(boundary);
  CHECK(*boundary == "----formdata-undici-024597830145");
  CHECK(*form_boundary(R"(multipart/form-data; boundary="a b")") == "a b");
  CHECK_FALSE(form_boundary("application/json"));
  CHECK_FALSE(form_boundary("multipart/form-data"));
}

TEST_CASE("form data: one part per file, destinations in filename") {
  auto parts = read_form(two_files, "----B");
  REQUIRE(parts);
  REQUIRE(parts->size() == 2);
  CHECK((*parts)[0].head.name == "file");
  CHECK((*parts)[0].head.filename == "/home/user/a.txt");
  CHECK((*parts)[0].head.content_type == "application/octet-stream");
  CHECK((*parts)[0].data == "hello\r\n--with CRLF inside");
  CHECK((*parts)[1].head.filename == "b.txt");
  CHECK((*parts)[1].data.empty());
}

TEST_CASE("form data: every split of the body into reads reads the same") {
  for (size_t piece = 1; piece <= 40; ++piece) {
    CAPTURE(piece);
    auto parts = read_form(two_files, "----B", piece);
    REQUIRE(parts);
    REQUIRE(parts->size() == 2);
    CHECK((*parts)[0].data == "hello\r\n--with CRLF inside");
    CHECK((*parts)[1].data.empty());
  }
  // An empty part, a preamble, and a part skipped unread.
  std::string body = "preamble\r\n--X\r\n"
                     "Content-Disposition: form-data; name=\"e\"\r\n\r\n"
                     "\r\n--X\r\n\r\nlast\r\n--X--";
  for (size_t piece = 1; piece <= 12; ++piece) {
    CAPTURE(piece);
    auto parts = read_form(body, "X", piece);
    REQUIRE(parts);
    REQUIRE(parts->size() == 2);
    CHECK((*parts)[0].head.name == "e");
    CHECK((*parts)[0].data.empty());
    CHECK((*parts)[1].data == "last");
  }
  size_t at = 0;
  form_reader skip{[&](std::string_view& bytes) -> expected<bool> {
                     if (at == body.size())
                       return false;
                     bytes = std::string_view{body}.substr(at, 3);
                     at += bytes.size();
                     return true;
                   },
                   "X"};
  REQUIRE(skip.next());
  auto second = skip.next();
  REQUIRE(second);
  REQUIRE(*second);
  auto end = (skip.next(), skip.next());
  REQUIRE(end);
  CHECK_FALSE(*end);
}

TEST_CASE("form data: a big part passes through in reads") {
  std::string data;
  for (int i = 0; i < 300000; ++i)
    data +=
        static_cast<char>('a' + i % 26) + std::string{i % 97 ? "" : "\r\n-"};
  auto body = "--BB\r\nContent-Disposition: form-data; name=\"file\"; "
              "filename=\"big\"\r\n\r\n" +
              data + "\r\n--BB--\r\n";
  auto parts = read_form(body, "BB", 65536);
  REQUIRE(parts);
  REQUIRE(parts->size() == 1);
  CHECK((*parts)[0].data == data);
}

TEST_CASE("form data: malformed bodies are refused with what is wrong") {
  for (const auto& bad :
       {two_files.substr(0, 60), std::string{"no boundary here"},
        two_files.substr(0, two_files.size() - 4),
        std::string{"------Bxx\r\n\r\n"},
        std::string{"------B\r\nContent-Disposition form-data\r\n\r\n"}}) {
    CAPTURE(bad);
    auto parts = read_form(bad, "----B");
    REQUIRE_FALSE(parts);
    CHECK(code_of(parts.error()) == errc::invalid_argument);
  }
}

TEST_CASE("form data: the epilogue is read to the body's end, a preamble is "
          "bounded") {
  auto body = two_files + "an epilogue the client may send";
  size_t at = 0;
  form_reader form{[&](std::string_view& bytes) -> expected<bool> {
                     if (at == body.size())
                       return false;
                     bytes = std::string_view{body}.substr(at, 7);
                     at += bytes.size();
                     return true;
                   },
                   "----B"};
  for (;;) {
    auto part = form.next();
    REQUIRE(part);
    if (!*part)
      break;
  }
  CHECK(at == body.size());
  auto endless = read_form(std::string(1 << 20, 'x') + "\r\n--B\r\n", "B");
  REQUIRE_FALSE(endless);
  CHECK(code_of(endless.error()) == errc::invalid_argument);
}
