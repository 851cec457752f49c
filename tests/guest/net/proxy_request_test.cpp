// SPDX-License-Identifier: Apache-2.0
// What the proxy reads before relaying: CONNECT targets, absolute-form
// requests rewritten to origin form, and what it refuses.
#include "guest/net/proxy_request.hpp"

#include <doctest/doctest.h>

using namespace allox::net;

TEST_CASE("proxy request: CONNECT names a host and port, and bytes after the "
          "header are payload") {
  std::string in = "CONNECT api.example.com:443 HTTP/1.1\r\nHost: "
                   "api.example.com:443\r\n\r\n\x16\x03\x01";
  auto r = parse_proxy_request(in);
  REQUIRE(r.what == proxy_request::state::ready);
  CHECK(r.tunnel);
  CHECK(r.host == "api.example.com");
  CHECK(r.port == 443);
  CHECK(in.substr(r.consumed) == "\x16\x03\x01");
  auto v6 = parse_proxy_request("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n");
  REQUIRE(v6.what == proxy_request::state::ready);
  CHECK(v6.host == "2001:db8::1");
  CHECK(v6.port == 8443);
}

TEST_CASE("proxy request: an absolute-form request goes upstream in origin "
          "form without proxy headers, one request per connection") {
  auto r = parse_proxy_request(
      "GET http://files.example.org:8080/a/b?x=1 HTTP/1.1\r\nHost: "
      "files.example.org:8080\r\nProxy-Connection: keep-alive\r\n"
      "Proxy-Authorization: Basic eA==\r\nAccept: */*\r\n\r\n");
  REQUIRE(r.what == proxy_request::state::ready);
  CHECK_FALSE(r.tunnel);
  CHECK(r.host == "files.example.org");
  CHECK(r.port == 8080);
  CHECK(r.head == "GET /a/b?x=1 HTTP/1.1\r\nHost: files.example.org:8080\r\n"
                  "Accept: */*\r\nConnection: close\r\n\r\n");
  auto d = parse_proxy_request("HEAD http://example.org HTTP/1.0\r\n\r\n");
  REQUIRE(d.what == proxy_request::state::ready);
  CHECK(d.port == 80);
  CHECK(d.head.rfind("HEAD / HTTP/1.0\r\n", 0) == 0);
}

TEST_CASE("proxy request: incomplete, oversized and unsupported requests") {
  CHECK(parse_proxy_request("CONNECT a:1 HTTP/1.1\r\nHost:").what ==
        proxy_request::state::incomplete);
  auto big = parse_proxy_request(std::string(70 * 1024, 'a'));
  CHECK(big.what == proxy_request::state::bad);
  CHECK(big.status == 431);
  for (const char* bad :
       {"CONNECT example.org HTTP/1.1\r\n\r\n",
        "CONNECT example.org:0 HTTP/1.1\r\n\r\n",
        "GET /relative HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET https://example.org/ HTTP/1.1\r\n\r\n", "hello\r\n\r\n"}) {
    CAPTURE(bad);
    auto r = parse_proxy_request(bad);
    CHECK(r.what == proxy_request::state::bad);
    CHECK(r.status == 400);
  }
}
