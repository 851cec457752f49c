// SPDX-License-Identifier: Apache-2.0
// The live stream of a run (GET /v1/stream) as an event-driven feed:
// pushed state, output read when the logs grow, resumable by
// Last-Event-ID, heartbeats, back-pressure, and no work while idle.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/raw_socket.hpp"
#include "tests/fixtures/session_files.hpp"

#include <doctest/doctest.h>

#include <thread>

using namespace allox;
using namespace allox::test;

namespace {

using namespace std::chrono_literals;

std::string start_sh(http_client& c, const std::string& script) {
  auto r = expect_ok(
      c.rpc("process.start",
            with(ids("a", "s"), {{"argv", json::array{"sh", "-c", script}}})));
  return std::string{r.at("run_id").as_string()};
}

/// A run of `script` that has ended: its id.
std::string ended_sh(http_client& c, const std::string& script) {
  auto run = start_sh(c, script);
  expect_ok(c.rpc("process.wait", with(ids("a", "s"), {{"run_id", run},
                                                       {"timeout_ms", 5000}})));
  return run;
}

std::string stream_request(const std::string& run,
                           const std::string& headers = {}) {
  return "GET /v1/stream?agent_id=a&session_id=s&run_id=" + run +
         " HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n";
}

/// The session actor's request counter (system.dump).
int64_t session_requests(http_client& c) {
  auto dump = expect_ok(c.rpc("system.dump"));
  auto* node = dump_node(dump.at("tree").as_object(), "session");
  REQUIRE(node != nullptr);
  return node->at("counters").as_object().at("requests").to_number<int64_t>();
}

} // namespace

TEST_CASE("stream: an idle stream costs the session nothing, and the end "
          "comes with the run's end") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto run = start_sh(c, "sleep 1.2; echo done");
  raw_socket s{d.port()};
  REQUIRE(s.send_all(stream_request(run)));
  auto head = s.read_for(2s, R"({"state":"running"})");
  CHECK(head.find(R"(event: state)"
                  "\n"
                  R"(data: {"state":"running"})") != std::string::npos);
  // While the run sleeps the stream asks the session for nothing (it used
  // to poll process.output every 50 ms).
  auto before = session_requests(c);
  std::this_thread::sleep_for(600ms);
  CHECK(session_requests(c) - before <= 1); // the dump's own request
  auto rest = s.read_until_closed(5s);
  auto done = rest.find(R"(data: {"offset":0,"data":"done\n"})");
  auto end = rest.find("event: end\n"
                       R"(data: {"state":"completed"})");
  CHECK(done != std::string::npos);
  REQUIRE(end != std::string::npos);
  CHECK(done < end);
  CHECK(rest.find("id: 5-0") != std::string::npos);
}

TEST_CASE("stream: a client reconnecting with Last-Event-ID loses nothing "
          "and sees nothing twice") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto run = ended_sh(c, "echo one; echo two; echo err >&2");
  raw_socket first{d.port()};
  REQUIRE(first.send_all(stream_request(run)));
  auto all = first.read_until_closed(5s);
  CHECK(all.find(R"("data":"one\ntwo\n")") != std::string::npos);
  // Resume after "one\n" of stdout and all of stderr.
  raw_socket second{d.port()};
  REQUIRE(second.send_all(stream_request(run, "Last-Event-ID: 4-4\r\n")));
  auto resumed = second.read_until_closed(5s);
  CHECK(resumed.find(R"(data: {"offset":4,"data":"two\n"})") !=
        std::string::npos);
  CHECK(resumed.find("one") == std::string::npos);
  CHECK(resumed.find("err") == std::string::npos);
  CHECK(resumed.find("event: end") != std::string::npos);
  raw_socket bad{d.port()};
  REQUIRE(bad.send_all(stream_request(run, "Last-Event-ID: nonsense\r\n")));
  CHECK(bad.read_until_closed(3s).rfind("HTTP/1.1 400", 0) == 0);
}

TEST_CASE("stream: heartbeats keep an idle stream alive") {
  daemon_process d{with_execution({"--stream-heartbeat-ms", "200"})};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto run = start_sh(c, "sleep 1");
  raw_socket s{d.port()};
  REQUIRE(s.send_all(stream_request(run)));
  auto body = s.read_for(900ms);
  CHECK(body.find(": heartbeat\n\n") != std::string::npos);
  expect_ok(c.rpc("process.stop", with(ids("a", "s"), {{"run_id", run}})));
}

TEST_CASE("stream: a client that does not read holds back output instead "
          "of growing the daemon, and still gets all of it") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto rss_before = status_kib(d.pid(), "VmRSS");
  // 16 MiB of output, written faster than anyone reads it.
  auto run = start_sh(c, "head -c 16777216 /dev/zero | tr '\\0' a");
  expect_ok(
      c.rpc("process.wait",
            with(ids("a", "s"), {{"run_id", run}, {"timeout_ms", 20000}})));
  raw_socket s{d.port()};
  REQUIRE(s.send_all(stream_request(run)));
  std::this_thread::sleep_for(800ms);
  auto growth_kib = status_kib(d.pid(), "VmRSS") - rss_before;
  INFO("RSS growth while the client did not read: " << growth_kib << " KiB");
  if (resource_bounds_apply)
    CHECK(growth_kib < 12 * 1024);
  auto body = s.read_until_closed(60s);
  size_t bytes = 0;
  for (auto pos = body.find("\"data\":\""); pos != std::string::npos;
       pos = body.find("\"data\":\"", pos + 1)) {
    auto from = pos + 8;
    bytes += body.find('"', from) - from;
  }
  CHECK(bytes == 16777216u);
  CHECK(body.find("event: end") != std::string::npos);
}

TEST_CASE("stream: the head, a refusal and the end are the wire's bytes") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto run = ended_sh(c, "printf x");
  raw_socket s{d.port()};
  REQUIRE(s.send_all(stream_request(run)));
  // Unchunked: the events frame themselves, and the body ends with the
  // connection.
  CHECK(s.read_until_closed(5s) ==
        "HTTP/1.1 200 OK\r\n"
        "Content-Type: text/event-stream\r\n"
        "Cache-Control: no-cache\r\n"
        "Server: allox-workspace-daemon\r\n"
        "Connection: close\r\n\r\n"
        "event: state\ndata: {\"state\":\"completed\"}\n\n"
        "event: stdout\ndata: {\"offset\":0,\"data\":\"x\"}\nid: 1-0\n\n"
        "event: end\ndata: {\"state\":\"completed\"}\n\n");
  raw_socket bad{d.port()};
  REQUIRE(
      bad.send_all("GET /v1/stream?agent_id=a HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string body =
      R"({"ok":false,"error":"stream requires agent_id, session_id and )"
      R"(run_id","code":"invalid_argument"})";
  CHECK(bad.read_until_closed(3s) == "HTTP/1.1 400 Bad Request\r\n"
                                     "Content-Type: application/json\r\n"
                                     "Server: allox-workspace-daemon\r\n"
                                     "Connection: close\r\n"
                                     "Content-Length: " +
                                         std::to_string(body.size()) +
                                         "\r\n\r\n" + body);
}

TEST_CASE("stream: a daemon that stops ends its live streams with a reason") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto run = start_sh(c, "sleep 30");
  raw_socket s{d.port()};
  REQUIRE(s.send_all(stream_request(run)));
  auto head = s.read_for(2s, R"({"state":"running"})");
  REQUIRE(head.find(R"({"state":"running"})") != std::string::npos);
  CHECK(d.stop(SIGTERM) == 0);
  auto rest = s.read_until_closed(5s);
  CHECK(rest.find("event: end\n"
                  R"(data: {"reason":"daemon_shutdown"})"
                  "\n\n") != std::string::npos);
}

TEST_CASE("stream: a target the URL grammar refuses is no stream's, and an "
          "empty Last-Event-ID starts at the beginning") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  raw_socket odd{d.port()};
  REQUIRE(odd.send_all("GET /v1/stream?x=%zz HTTP/1.1\r\nHost: x\r\n"
                       "Connection: close\r\n\r\n"));
  CHECK(odd.read_until_closed(3s).rfind("HTTP/1.1 404", 0) == 0);
  CHECK(c.raw("GET /health HTTP/1.1\r\nHost: x\r\n\r\n").status == 200);
  auto run = ended_sh(c, "printf x");
  raw_socket s{d.port()};
  REQUIRE(s.send_all(stream_request(run, "Last-Event-ID: \r\n")));
  auto all = s.read_until_closed(5s);
  CHECK(all.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(all.find(R"(data: {"offset":0,"data":"x"})") != std::string::npos);
}
