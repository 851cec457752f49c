// SPDX-License-Identifier: Apache-2.0
// The HTTP transport and envelope, against the real daemon.
#include "tests/fixtures/daemon.hpp"

#include <doctest/doctest.h>

#include <thread>

using namespace allox;
using namespace allox::test;

TEST_CASE("rpc: health needs no token - unknown paths are 404") {
  daemon_process d{with_token("s3cret")};
  d.start();
  auto anon = http_client{"127.0.0.1", d.port()};
  auto h = anon.request("GET", "/health");
  CHECK(h.status == 200);
  CHECK(h.json.as_object().at("status") == "healthy");
  CHECK(anon.request("GET", "/nope").status == 404);
  // Paths are checked before authentication, as in the prototype.
  auto p = anon.request("POST", "/v1/other", "{}");
  CHECK(p.status == 404);
  CHECK(anon.request("PUT", "/v1/rpc", "{}").status == 404);
  // Exactly /v1/rpc: with a query it is another path (and so is
  // /metrics for GET).
  CHECK(anon.request("POST", "/v1/rpc?x=1", "{}").status == 404);
  CHECK(anon.request("GET", "/metrics?x=1").status == 404);
  CHECK(anon.request("GET", "/metrics").status == 401);
}

TEST_CASE("rpc: bearer token on and off") {
  daemon_process d{with_token("s3cret")};
  d.start();
  http_client none{"127.0.0.1", d.port()};
  expect_error(none.rpc("agent.list"), 401, "unauthorized");
  http_client wrong{"127.0.0.1", d.port(), "s3creT"};
  expect_error(wrong.rpc("agent.list"), 401, "unauthorized");
  http_client right{"127.0.0.1", d.port(), "s3cret"};
  expect_ok(right.rpc("agent.list"));
}

TEST_CASE("rpc: no token means no authentication") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("agent.list"));
}

TEST_CASE("rpc: envelope errors") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  auto post = [&](const std::string& body) {
    return c.request("POST", "/v1/rpc", body);
  };
  expect_error(post("{not json"), 400, "invalid_argument");
  // A JSON body that is not an object is the caller's mistake (400).
  auto arr = post("[1,2]");
  expect_error(arr, 400, "invalid_argument");
  CHECK(arr.json.as_object().at("error") ==
        "request requires string action and object params");
  expect_error(post(R"({"action":7})"), 400, "invalid_argument");
  expect_error(post(R"({"action":"agent.list","params":[1]})"), 400,
               "invalid_argument");
  // params may be omitted.
  expect_ok(post(R"({"action":"agent.list"})"));
  auto unknown = c.rpc("no.such.action");
  expect_error(unknown, 400, "invalid_argument");
  CHECK(unknown.json.as_object().at("error") ==
        "unknown action: no.such.action");
}

TEST_CASE("rpc: body size limits") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  std::string big(1024 * 1024 + 1, ' ');
  auto r = c.request("POST", "/v1/rpc", big);
  expect_error(r, 400, "payload_too_large");
  CHECK(r.json.as_object().at("error") == "invalid request size");
  auto empty = c.raw("POST /v1/rpc HTTP/1.1\r\nHost: x\r\n"
                     "Content-Length: 0\r\n\r\n");
  expect_error(empty, 400, "payload_too_large");
  auto missing = c.raw("POST /v1/rpc HTTP/1.1\r\nHost: x\r\n\r\n");
  expect_error(missing, 400, "payload_too_large");
  // Exactly 1 MiB is accepted (and then fails as JSON, not as size).
  std::string max(1024 * 1024, ' ');
  max.replace(0, 2, "{}");
  expect_error(c.request("POST", "/v1/rpc", max), 400, "invalid_argument");
}

TEST_CASE("rpc: oversized headers are refused") {
  daemon_process d;
  d.start();
  std::string req = "POST /v1/rpc HTTP/1.1\r\nHost: x\r\nX-Big: " +
                    std::string(70 * 1024, 'a') + "\r\n\r\n";
  auto r = d.client().raw(req);
  CHECK(r.status == 431);
}

TEST_CASE("rpc: a rejected request never poisons a keep-alive connection") {
  daemon_process d{with_token("tok")};
  d.start();
  http_client c{"127.0.0.1", d.port()};
  // 401 with an unread body: the daemon closes instead of parsing the body
  // as the next request.
  std::string body = R"({"action":"agent.list"})";
  auto r = c.raw("POST /v1/rpc HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\n\r\n" + body +
                 "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(r.status == 401);
  CHECK_FALSE(r.keep_alive);
  CHECK(c.closed_by_peer(std::chrono::seconds{2}));
}

TEST_CASE("rpc: keep-alive serves many requests on one connection, in "
          "order, including pipelined ones") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  for (int i = 0; i < 50; ++i)
    expect_ok(c.rpc("agent.list"));
  std::string one = R"({"action":"agent.list"})";
  std::string req = "POST /v1/rpc HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                    std::to_string(one.size()) + "\r\n\r\n" + one;
  auto r = c.raw(req + req + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(r.status == 200);
}

TEST_CASE("rpc: idle connections are closed") {
  daemon_process d{with_args({"--idle-timeout-ms", "300"})};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("agent.list"));
  CHECK(c.closed_by_peer(std::chrono::seconds{3}));
}

TEST_CASE("rpc: IPv6 loopback works") {
  daemon_process d{on_host("::1")};
  d.start();
  expect_ok(d.client().rpc("agent.list"));
}
