// SPDX-License-Identifier: Apache-2.0
// Clients that do not play along: pipelining without reading, trickling a
// request byte by byte, holding every connection slot. Each is bounded in
// time and talks to the daemon on loopback only.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/raw_socket.hpp"
#include "tests/fixtures/session_files.hpp"
#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <sstream>
#include <thread>

using namespace allox;
using namespace allox::test;

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

/// User plus system CPU time of a process, in seconds.
double cpu_seconds(pid_t pid) {
  auto text = read_file("/proc/" + std::to_string(pid) + "/stat");
  // Fields after the command name, which ends with the last ')'.
  std::istringstream in{text.substr(text.rfind(')') + 2)};
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && in >> field; ++i)
    if (i == 14 || i == 15)
      ticks += std::stod(field);
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

/// Checks an error body: `ok: false`, a string `error` and `code`.
void expect_envelope(const std::string& body, const std::string& code) {
  boost::system::error_code ec;
  auto doc = json::parse(body, ec);
  INFO("body: " << body);
  REQUIRE_FALSE(ec);
  REQUIRE(doc.is_object());
  const auto& o = doc.as_object();
  CHECK(o.contains("ok"));
  CHECK(o.contains("error"));
  if (o.contains("ok"))
    CHECK(o.at("ok") == false);
  if (o.contains("error"))
    CHECK(o.at("error").is_string());
  CHECK(o.contains("code"));
  if (o.contains("code"))
    CHECK(o.at("code") == json::value(code));
}

std::string body_of(const std::string& response) {
  auto pos = response.find("\r\n\r\n");
  return pos == std::string::npos ? std::string{} : response.substr(pos + 4);
}

const std::string list_request = "POST /v1/rpc HTTP/1.1\r\nHost: x\r\n"
                                 "Content-Length: 23\r\n\r\n"
                                 R"({"action":"agent.list"})";

} // namespace

TEST_CASE("slow clients: a pipelining client that never reads is bounded "
          "in memory and CPU and closed as idle") {
  daemon_process d{with_args({"--idle-timeout-ms", "1000"})};
  d.start();
  expect_ok(d.client().rpc("agent.list"));
  auto rss_before = status_kib(d.pid(), "VmRSS");
  raw_socket s{d.port()};
  auto sent = s.flood(list_request, 64u << 20, 500ms);
  auto cpu_start = cpu_seconds(d.pid());
  std::this_thread::sleep_for(2500ms);
  auto cpu = cpu_seconds(d.pid()) - cpu_start;
  auto growth_kib = status_kib(d.pid(), "VmRSS") - rss_before;
  INFO("sent " << sent << " bytes; RSS growth " << growth_kib << " KiB; CPU "
               << cpu << " s");
  // The daemon stops reading: the kernel buffers fill long before 64 MiB.
  CHECK(sent < (16u << 20));
  if (resource_bounds_apply) {
    CHECK(growth_kib < 8 * 1024);
    CHECK(cpu < 0.5);
  }
  // A writer stalled for the idle timeout is idle: closed (a sanitized
  // build first takes seconds to answer what the socket buffers held).
  CHECK(eventually([&] { return s.closed_by_daemon(); },
                   resource_bounds_apply ? 1s : 60s));
  // Everyone else is served throughout.
  CHECK(d.new_client()->request("GET", "/health").status == 200);
}

TEST_CASE("slow clients: a pipelining client that reads late gets "
          "every answer") {
  daemon_process d;
  d.start();
  raw_socket s{d.port()};
  // More answers than the kernel buffers take unread: the daemon waits
  // for the peer to read, then serves the rest.
  constexpr size_t requests = 40000;
  std::string all;
  for (size_t i = 0; i < requests; ++i)
    all += list_request;
  auto sender = std::async(std::launch::async, [&] { return s.send_all(all); });
  std::this_thread::sleep_for(500ms);
  std::string got;
  size_t answers = 0;
  size_t scanned = 0;
  auto deadline = clock_type::now() + 30s;
  while (answers < requests && clock_type::now() < deadline) {
    got += s.read_for(100ms);
    for (auto at = got.find("HTTP/1.1 200 OK", scanned);
         at != std::string::npos; at = got.find("HTTP/1.1 200 OK", scanned)) {
      ++answers;
      scanned = at + 1;
    }
  }
  CHECK(sender.get());
  CHECK(answers == requests);
  CHECK(got.find("HTTP/1.1 4") == std::string::npos);
}

TEST_CASE("slow clients: a request head must arrive within the header "
          "timeout of its first byte") {
  daemon_process d{with_args({"--header-timeout-ms", "1000"})};
  d.start();
  raw_socket s{d.port()};
  std::string head = "POST /v1/rpc HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  auto started = clock_type::now();
  bool closed = false;
  // One byte every 100 ms would keep an idle timer alive forever.
  for (int i = 0; i < 60 && !closed; ++i) {
    closed = !s.send_all(std::string(1, head[i % head.size()]));
    std::this_thread::sleep_for(100ms);
    closed = closed || s.closed_by_daemon();
  }
  auto took = clock_type::now() - started;
  CHECK(closed);
  CHECK(took < 4s);
  auto reply = s.read_until_closed(2s);
  CHECK(reply.rfind("HTTP/1.1 408", 0) == 0);
  expect_envelope(body_of(reply), "request_timeout");
}

TEST_CASE("slow clients: a request body must arrive within the body timeout "
          "of its head") {
  daemon_process d{with_args({"--body-timeout-ms", "800"})};
  d.start();
  raw_socket s{d.port()};
  REQUIRE(s.send_all("POST /v1/rpc HTTP/1.1\r\nHost: x\r\n"
                     "Content-Length: 100\r\n\r\n{"));
  auto reply = s.read_until_closed(4s);
  CHECK(reply.rfind("HTTP/1.1 408", 0) == 0);
  expect_envelope(body_of(reply), "request_timeout");
}

TEST_CASE("slow clients: at the connection limit idle and trickling peers "
          "make room for new clients") {
  daemon_process d{with_args({"--max-connections", "4"})};
  d.start();
  std::vector<std::unique_ptr<raw_socket>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<raw_socket>(d.port()));
    REQUIRE(held.back()->send_all("POST /v1/rpc HTTP/1.1\r\nHo"));
    std::this_thread::sleep_for(20ms);
  }
  // Every newcomer is served, each at the cost of the quietest holder.
  for (int i = 0; i < 6; ++i) {
    auto c = d.new_client();
    auto r = c->request("GET", "/health");
    CHECK(r.status == 200);
  }
  CHECK(eventually([&] { return held.front()->closed_by_daemon(); }, 2s));
}

TEST_CASE("slow clients: only when every connection is busy is a newcomer "
          "refused, with the error envelope") {
  daemon_process d{with_args({"--max-connections", "2"})};
  d.start();
  auto& c = d.client();
  if (!fault_injection_built(c))
    return;
  c.disconnect();
  expect_ok(c.rpc("agent.create", ids("x")));
  expect_ok(c.rpc("agent.create", ids("y")));
  expect_ok(
      c.rpc("debug.fault", fault("x", "", "agent.describe", "delay", 1500)));
  expect_ok(
      c.rpc("debug.fault", fault("y", "", "agent.describe", "delay", 1500)));
  c.disconnect();
  auto a = d.new_client();
  auto b = d.new_client();
  auto slow_a = std::async(std::launch::async,
                           [&] { return a->rpc("agent.describe", ids("x")); });
  auto slow_b = std::async(std::launch::async,
                           [&] { return b->rpc("agent.describe", ids("y")); });
  std::this_thread::sleep_for(300ms);
  raw_socket third{d.port()};
  auto reply = third.read_until_closed(2s);
  CHECK(reply.rfind("HTTP/1.1 503", 0) == 0);
  expect_envelope(body_of(reply), "unavailable");
  expect_ok(slow_a.get());
  expect_ok(slow_b.get());
  CHECK(d.new_client()->request("GET", "/health").status == 200);
}

TEST_CASE("slow clients: every error body has ok, error and code") {
  daemon_process d{with_token("tok")};
  d.start();
  auto send = [&](const std::string& bytes) {
    raw_socket s{d.port()};
    REQUIRE(s.send_all(bytes));
    return s.read_until_closed(3s);
  };
  auto auth = std::string{"Authorization: Bearer tok\r\n"};
  expect_envelope(body_of(send("GET /nope HTTP/1.1\r\nHost: x\r\n"
                               "Connection: close\r\n\r\n")),
                  "not_found");
  expect_envelope(body_of(send("POST /v1/other HTTP/1.1\r\nHost: x\r\n"
                               "Content-Length: 2\r\n\r\n{}")),
                  "not_found");
  expect_envelope(body_of(send(list_request)), "unauthorized");
  expect_envelope(body_of(send("GARBAGE\r\n\r\n")), "invalid_argument");
  expect_envelope(body_of(send("POST /v1/rpc HTTP/1.1\r\nHost: x\r\n" + auth +
                               "Content-Length: 0\r\n\r\n")),
                  "payload_too_large");
  expect_envelope(
      body_of(send("POST /v1/rpc HTTP/1.1\r\nHost: x\r\n" + auth +
                   "X-Big: " + std::string(70 * 1024, 'a') + "\r\n\r\n")),
      "invalid_argument");
  expect_envelope(body_of(send("POST /v1/rpc HTTP/1.1\r\nHost: x\r\n" + auth +
                               "Connection: close\r\nContent-Length: 9\r\n\r\n"
                               "{not json")),
                  "invalid_argument");
}
