// SPDX-License-Identifier: Apache-2.0
// How an upload's body is read: a declared length partly with the head and
// then straight into the worker's buffers, stopping at the body's end; a
// chunked body gathered frame by frame. Either way the file holds the
// bytes in order, and the connection goes on with the next request.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/raw_socket.hpp"
#include "tests/fixtures/session_files.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

using namespace allox;
using namespace allox::test;

namespace {

/// Bytes no two places of which are likely to be swapped unnoticed.
std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>((i * 7 + i / 4099) % 251);
  return s;
}

/// A file.stat of `path` in a/s, as a pipelined request.
std::string stat_request(const std::string& path) {
  std::string body = R"({"action":"file.stat","params":)"
                     R"({"agent_id":"a","session_id":"s","path":")" +
                     path + R"("}})";
  return "POST /v1/rpc HTTP/1.1\r\nHost: x\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

} // namespace

TEST_CASE("bulk body: a declared length read in place ends where it says, "
          "and the next request follows") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  // Some buffers' worth and an odd rest, so reads end mid-buffer.
  auto data = pattern((3 << 20) + 17);
  size_t early = 100 << 10;
  raw_socket sock{d.port()};
  REQUIRE(sock.send_all("PUT /v1/files/a/s/p HTTP/1.1\r\nHost: x\r\n"
                        "Content-Length: " +
                        std::to_string(data.size()) + "\r\n\r\n" +
                        data.substr(0, early)));
  // The worker starts and takes what came with the head; the rest of the
  // body, and the request after it, arrive as one stream.
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  REQUIRE(sock.send_all(data.substr(early) + stat_request("p")));
  auto got = sock.read_for(std::chrono::seconds{10}, "mtime_ns");
  INFO(got.substr(0, 2000));
  CHECK(got.find("HTTP/1.1 200") == 0);
  CHECK(got.find("mtime_ns") != std::string::npos);
  CHECK(got.find("malformed") == std::string::npos);
  CHECK(!sock.closed_by_daemon());
  CHECK(read_file(d.current("a", "s") + "/p") == data);
}

TEST_CASE("bulk body: a chunked body of many small frames is written in "
          "order, and the next request follows") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto data = pattern((2 << 20) + 5);
  std::string framed;
  for (size_t at = 0, n = 1; at < data.size(); at += n, n = n * 3 % 5003 + 1) {
    n = std::min(n, data.size() - at);
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", n);
    framed += size + data.substr(at, n) + "\r\n";
  }
  framed += "0\r\n\r\n";
  raw_socket sock{d.port()};
  REQUIRE(sock.send_all("PUT /v1/files/a/s/c HTTP/1.1\r\nHost: x\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n" +
                        framed.substr(0, framed.size() / 3)));
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  REQUIRE(sock.send_all(framed.substr(framed.size() / 3) + stat_request("c")));
  auto got = sock.read_for(std::chrono::seconds{10}, "mtime_ns");
  INFO(got.substr(0, 2000));
  CHECK(got.find("HTTP/1.1 200") == 0);
  CHECK(got.find("mtime_ns") != std::string::npos);
  CHECK(!sock.closed_by_daemon());
  CHECK(read_file(d.current("a", "s") + "/c") == data);
}
