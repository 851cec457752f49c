// SPDX-License-Identifier: Apache-2.0
// Routes a front registers on the HTTP server: which route serves a path,
// and a real server on loopback handing requests to them and writing their
// answers, given at once on the loop or later from another thread.
#include "guest/http/server.hpp"
#include "tests/fixtures/raw_socket.hpp"
#include "tests/fixtures/route_server.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

using namespace allox;
using namespace allox::http;
using boost::beast::http::verb;
using test::route_server;

namespace {

route_fn answering(std::string body) {
  return [body](const route_request&, responder answer) {
    answer({200, "text/plain", body, {}});
  };
}

/// GET /transport: the transport's metrics, read on the loop thread as a
/// scrape reads them (and, as a scrape, not counted).
route transport_metrics_route(server& srv) {
  return {verb::get, "/transport", route_match::exact, route_access::open,
          [&srv](const route_request&, responder answer) {
            route_response r{200, "text/plain", srv.transport_metrics(1), {}};
            r.counted_as = route_response::tally::none;
            answer(std::move(r));
          }};
}

std::string exchange(uint16_t port, const std::string& request) {
  test::raw_socket s{port};
  REQUIRE(s.send_all(request));
  return s.read_until_closed(std::chrono::seconds{5});
}

} // namespace

TEST_CASE("routes: an exact path before the longest prefix, the query "
          "ignored, the method required") {
  std::vector<route> routes;
  auto open = route_access::open;
  routes.push_back({verb::get, "/e2b/", route_match::prefix, open, {}});
  routes.push_back({verb::get, "/e2b/envd/", route_match::prefix, open, {}});
  routes.push_back({verb::get, "/e2b/health", route_match::exact, open, {}});
  routes.push_back({verb::post, "/mcp", route_match::exact, open, {}});
  route bare{verb::post, "/v1/rpc", route_match::exact, open, {}};
  bare.bare = true;
  routes.push_back(bare);
  auto path_of = [&](verb m, std::string_view target) -> std::string {
    auto* r = find_route(routes, m, target);
    return r ? r->path : "none";
  };
  CHECK(path_of(verb::get, "/e2b/health") == "/e2b/health");
  CHECK(path_of(verb::get, "/e2b/health/x") == "/e2b/");
  CHECK(path_of(verb::get, "/e2b/envd/files?path=/x") == "/e2b/envd/");
  CHECK(path_of(verb::get, "/e2b/sandboxes") == "/e2b/");
  CHECK(path_of(verb::get, "/e2b") == "none");
  CHECK(path_of(verb::post, "/mcp?agent=a") == "/mcp");
  CHECK(path_of(verb::post, "/mcp/x") == "none");
  CHECK(path_of(verb::get, "/mcp") == "none");
  CHECK(path_of(verb::post, "/v1/rpc") == "/v1/rpc");
  CHECK(path_of(verb::post, "/v1/rpc?x=1") == "none");
}

TEST_CASE("routes: a path registered twice is refused") {
  route_server rs;
  rs.srv().add_route({verb::get, "/x", route_match::exact, route_access::open,
                      answering("a")});
  CHECK_THROWS_AS(rs.srv().add_route({verb::get, "/x", route_match::exact,
                                      route_access::open, answering("b")}),
                  std::logic_error);
  rs.srv().add_route({verb::post, "/x", route_match::exact, route_access::open,
                      answering("c")});
}

TEST_CASE("routes: the server hands a request to its route and writes the "
          "answer, given at once or later from another thread") {
  route_server rs{"tok"};
  rs.srv().add_route({verb::get, "/page", route_match::exact,
                      route_access::open,
                      [](const route_request& req, responder answer) {
                        answer({200,
                                "text/html",
                                "page " + std::string{req.target()},
                                {{"X-Front", "page"}}});
                      }});
  std::vector<std::future<void>> later;
  rs.srv().add_route(
      {verb::post, "/api/", route_match::prefix, route_access::token,
       [&later](const route_request& req, responder answer) {
         later.push_back(
             std::async(std::launch::async, [answer, body = req.body()] {
               std::this_thread::sleep_for(std::chrono::milliseconds{50});
               answer({201, "application/json", "{\"echo\":" + body + "}", {}});
             }));
       }});
  auto port = rs.start();

  auto page = exchange(port, "GET /page?x=1 HTTP/1.1\r\nHost: h\r\n"
                             "Connection: close\r\n\r\n");
  CHECK(page.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(page.find("Content-Type: text/html") != std::string::npos);
  CHECK(page.find("X-Front: page") != std::string::npos);
  CHECK(page.find("\r\n\r\npage /page?x=1") != std::string::npos);

  // The token rule of the route, as the native RPC's.
  auto refused = exchange(port, "POST /api/a HTTP/1.1\r\nHost: h\r\n"
                                "Content-Length: 2\r\n\r\n{}");
  CHECK(refused.rfind("HTTP/1.1 401", 0) == 0);

  auto api = exchange(port, "POST /api/a HTTP/1.1\r\nHost: h\r\n"
                            "Authorization: Bearer tok\r\n"
                            "Connection: close\r\n"
                            "Content-Length: 2\r\n\r\n[]");
  CHECK(api.rfind("HTTP/1.1 201", 0) == 0);
  CHECK(api.find("\r\n\r\n{\"echo\":[]}") != std::string::npos);

  // Paths no route serves keep the transport's answers.
  auto none = exchange(port, "GET /pages HTTP/1.1\r\nHost: h\r\n"
                             "Connection: close\r\n\r\n");
  CHECK(none.rfind("HTTP/1.1 404", 0) == 0);
  auto health = exchange(port, "GET /health HTTP/1.1\r\nHost: h\r\n"
                               "Connection: close\r\n\r\n");
  CHECK(health.rfind("HTTP/1.1 200", 0) == 0);
  for (auto& f : later)
    f.get();
}

TEST_CASE("routes: an answer given after its client went away is dropped, "
          "and the server serves on") {
  route_server rs;
  std::promise<responder> held;
  auto taken = held.get_future();
  rs.srv().add_route({verb::get, "/slow", route_match::exact,
                      route_access::open,
                      [&held](const route_request&, responder answer) {
                        held.set_value(answer);
                      }});
  rs.srv().add_route({verb::get, "/fast", route_match::exact,
                      route_access::open, answering("fast")});
  auto port = rs.start();
  {
    test::raw_socket gone{port};
    REQUIRE(gone.send_all("GET /slow HTTP/1.1\r\nHost: h\r\n\r\n"));
    REQUIRE(taken.wait_for(std::chrono::seconds{5}) ==
            std::future_status::ready);
  }
  // The connection closes; its answer comes later and must go nowhere.
  std::this_thread::sleep_for(std::chrono::milliseconds{100});
  auto answer = taken.get();
  answer({200, "text/plain", "late", {}});
  answer({200, "text/plain", "twice", {}});
  auto fast = exchange(port, "GET /fast HTTP/1.1\r\nHost: h\r\n"
                             "Connection: close\r\n\r\n");
  CHECK(fast.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(fast.find("late") == std::string::npos);
  CHECK(fast.find("\r\n\r\nfast") != std::string::npos);
}

TEST_CASE("routes: a streamed answer goes out chunk by chunk and ends with "
          "its last chunk and its connection, and a stream whose client left "
          "reads closed") {
  route_server rs;
  std::promise<responder> held;
  auto taken = held.get_future();
  rs.srv().add_route(
      {verb::post, "/stream", route_match::exact, route_access::open,
       [&held](const route_request&, responder answer) {
         route_response head{200, "application/x-parts", "first;", {}};
         head.streaming = true;
         answer(std::move(head));
         held.set_value(answer);
       }});
  auto port = rs.start();
  test::raw_socket s{port};
  REQUIRE(s.send_all("POST /stream HTTP/1.1\r\nHost: h\r\n"
                     "Content-Length: 0\r\n\r\n"));
  REQUIRE(taken.wait_for(std::chrono::seconds{5}) == std::future_status::ready);
  auto answer = taken.get();
  auto head = s.read_for(std::chrono::seconds{5}, "first;");
  CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(head.find("Content-Type: application/x-parts") != std::string::npos);
  CHECK(head.find("Content-Length") == std::string::npos);
  CHECK(head.find("Transfer-Encoding: chunked") != std::string::npos);
  CHECK(head.find("\r\n\r\n6\r\nfirst;\r\n") != std::string::npos);
  CHECK(answer.open());
  answer.more("second;");
  CHECK(s.read_for(std::chrono::seconds{5}, "second;\r\n") ==
        "7\r\nsecond;\r\n");
  answer.more("last", true);
  CHECK(s.read_until_closed(std::chrono::seconds{5}) ==
        "4\r\nlast\r\n0\r\n\r\n");
  // Complete: the front sees it closed, and later parts go nowhere.
  for (int i = 0; i < 100 && answer.open(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  CHECK_FALSE(answer.open());
  answer.more("after");

  // A client that leaves mid-stream closes its responder.
  std::promise<responder> again;
  auto second = again.get_future();
  held = std::move(again);
  {
    test::raw_socket gone{port};
    REQUIRE(gone.send_all("POST /stream HTTP/1.1\r\nHost: h\r\n"
                          "Content-Length: 0\r\n\r\n"));
    REQUIRE(second.wait_for(std::chrono::seconds{5}) ==
            std::future_status::ready);
    gone.read_for(std::chrono::seconds{5}, "first;");
  }
  auto left = second.get();
  for (int i = 0; i < 200 && left.open(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  CHECK_FALSE(left.open());
  left.more("to nobody", true);
}

TEST_CASE("routes: a body over the route's limit is refused after the "
          "token, with 413 or the route's own answer, and the metrics count "
          "it as rejected") {
  route_server rs{"tok"};
  route small{verb::post, "/small", route_match::exact, route_access::token,
              answering("taken")};
  small.max_body = 4;
  rs.srv().add_route(small);
  route sized{verb::post, "/sized", route_match::exact, route_access::token,
              answering("taken")};
  sized.length_required = true;
  sized.too_large = [] {
    return route_response{400, "application/json", "{\"size\":false}", {}};
  };
  rs.srv().add_route(sized);
  rs.srv().add_route(transport_metrics_route(rs.srv()));
  auto port = rs.start();
  // (Qualified: with a std::string argument, ADL would find
  // std::exchange.)
  const std::string auth = "Authorization: Bearer tok\r\n";

  // No token: the caller learns nothing of the limit.
  auto anonymous = ::exchange(port, "POST /small HTTP/1.1\r\nHost: h\r\n"
                                    "Content-Length: 9\r\n\r\n123456789");
  CHECK(anonymous.rfind("HTTP/1.1 401", 0) == 0);

  auto declared =
      ::exchange(port, "POST /small HTTP/1.1\r\nHost: h\r\n" + auth +
                           "Content-Length: 9\r\n\r\n123456789");
  CHECK(declared.rfind("HTTP/1.1 413", 0) == 0);
  CHECK(declared.find("the body declares 9 bytes; this route takes at most "
                      "4") != std::string::npos);
  auto chunked = ::exchange(port, "POST /small HTTP/1.1\r\nHost: h\r\n" + auth +
                                      "Transfer-Encoding: chunked\r\n\r\n"
                                      "9\r\n123456789\r\n0\r\n\r\n");
  CHECK(chunked.rfind("HTTP/1.1 413", 0) == 0);
  CHECK(chunked.find("the body passes this route's limit of 4") !=
        std::string::npos);

  // A route that needs a length answers its own way, for a body without
  // one as for one over the limit.
  auto empty = ::exchange(port, "POST /sized HTTP/1.1\r\nHost: h\r\n" + auth +
                                    "Content-Length: 0\r\n\r\n");
  CHECK(empty.rfind("HTTP/1.1 400", 0) == 0);
  CHECK(empty.find("\r\n\r\n{\"size\":false}") != std::string::npos);
  auto unsized = ::exchange(port, "POST /sized HTTP/1.1\r\nHost: h\r\n" + auth +
                                      "Transfer-Encoding: chunked\r\n\r\n"
                                      "2\r\n{}\r\n0\r\n\r\n");
  CHECK(unsized.find("\r\n\r\n{\"size\":false}") != std::string::npos);
  auto taken = ::exchange(port, "POST /sized HTTP/1.1\r\nHost: h\r\n" + auth +
                                    "Connection: close\r\n"
                                    "Content-Length: 2\r\n\r\n{}");
  CHECK(taken.rfind("HTTP/1.1 200", 0) == 0);

  // The transport's own paths keep the prototype's answer to a body over
  // max_body, and never read it.
  auto health = ::exchange(port, "GET /health HTTP/1.1\r\nHost: h\r\n"
                                 "Content-Length: 5000000\r\n\r\n");
  CHECK(health.rfind("HTTP/1.1 400", 0) == 0);
  CHECK(health.find("invalid request size") != std::string::npos);

  auto metrics = ::exchange(port, "GET /transport HTTP/1.1\r\nHost: h\r\n"
                                  "Connection: close\r\n\r\n");
  CHECK(metrics.find("allox_http_requests_in_flight 0") != std::string::npos);
  CHECK(metrics.find("allox_http_rejected_requests_total{code=\"401\"} 1") !=
        std::string::npos);
  CHECK(metrics.find("allox_http_rejected_requests_total{code=\"413\"} 2") !=
        std::string::npos);
  CHECK(metrics.find("allox_http_rejected_requests_total{code=\"400\"} 3") !=
        std::string::npos);
  CHECK(metrics.find("allox_rpc_requests_total{action=\"/sized\",code=\"200\"}"
                     " 1") != std::string::npos);
}

TEST_CASE("routes: an answer names the action its metrics count, or keeps "
          "out of them") {
  route_server rs;
  rs.srv().add_route({verb::post, "/act", route_match::exact,
                      route_access::open,
                      [](const route_request& req, responder answer) {
                        route_response r{200, "text/plain", "done", {}};
                        r.action = req.body();
                        answer(std::move(r));
                      }});
  rs.srv().add_route({verb::get, "/quiet", route_match::exact,
                      route_access::open,
                      [](const route_request&, responder answer) {
                        route_response r{200, "text/plain", "shh", {}};
                        r.counted_as = route_response::tally::none;
                        answer(std::move(r));
                      }});
  rs.srv().add_route(transport_metrics_route(rs.srv()));
  auto port = rs.start();
  auto act = ::exchange(port, "POST /act HTTP/1.1\r\nHost: h\r\n"
                              "Connection: close\r\n"
                              "Content-Length: 8\r\n\r\nthing.do");
  CHECK(act.rfind("HTTP/1.1 200", 0) == 0);
  auto quiet = ::exchange(port, "GET /quiet HTTP/1.1\r\nHost: h\r\n"
                                "Connection: close\r\n\r\n");
  CHECK(quiet.rfind("HTTP/1.1 200", 0) == 0);
  auto metrics = ::exchange(port, "GET /transport HTTP/1.1\r\nHost: h\r\n"
                                  "Connection: close\r\n\r\n");
  CHECK(metrics.find("allox_rpc_requests_total{action=\"thing.do\","
                     "code=\"200\"} 1") != std::string::npos);
  CHECK(metrics.find("/act") == std::string::npos);
  CHECK(metrics.find("/quiet") == std::string::npos);
}
