// SPDX-License-Identifier: Apache-2.0
// Live answers (responder::live): a front feeding a streamed answer from
// the loop thread, told by the transport when its client is behind, when
// it drained, when the answer is gone and when the server stops.
#include "guest/http/server.hpp"
#include "tests/fixtures/raw_socket.hpp"
#include "tests/fixtures/route_server.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>

using namespace allox;
using namespace allox::http;
using boost::beast::http::verb;
using test::route_server;

namespace {

using namespace std::chrono_literals;

/// What the route's front holds of its live answer, and what the
/// transport told it (loop thread; counts read by the test thread).
struct feed {
  live_answer out;
  std::promise<void> opened;
  std::promise<void> drained;
  std::atomic<int> gone{0};
  std::atomic<int> drains{0};
  /// Said at shutdown; none: cut off.
  std::string last_words;
};

/// GET `path`: an unchunked live answer whose head says "head;".
void add_live_route(route_server& rs, std::shared_ptr<feed> f,
                    std::string path = "/live") {
  rs.srv().add_route(
      {verb::get, std::move(path), route_match::exact, route_access::open,
       [f](const route_request&, responder answer) {
         route_response head{200, "text/event-stream", "head;", {}};
         head.chunked = false;
         live_hooks hooks;
         hooks.drained = [f] {
           if (f->drains++ == 0)
             f->drained.set_value();
         };
         hooks.stopping = [f] {
           if (!f->last_words.empty())
             f->out.send(f->last_words, true);
         };
         hooks.gone = [f] {
           ++f->gone;
         };
         f->out = answer.live(std::move(head), std::move(hooks));
         f->opened.set_value();
       }});
}

/// Runs `fn` on the server's loop thread and waits for it.
template <class Fn>
auto on_loop(route_server& rs, Fn fn) {
  std::promise<decltype(fn())> done;
  auto result = done.get_future();
  rs.srv().run_on_loop([&] { done.set_value(fn()); });
  REQUIRE(result.wait_for(5s) == std::future_status::ready);
  return result.get();
}

/// Asks for the live answer at `path` on `s`; what arrived up to its
/// head's "head;".
std::string open_live(test::raw_socket& s, const std::string& path = "/live") {
  REQUIRE(s.send_all("GET " + path + " HTTP/1.1\r\nHost: h\r\n\r\n"));
  return s.read_for(5s, "head;");
}

void wait_gone(const feed& f) {
  for (int i = 0; i < 200 && f.gone == 0; ++i)
    std::this_thread::sleep_for(10ms);
}

} // namespace

TEST_CASE("live answer: the head goes out at once, parts as they are sent, "
          "and the last ends it: the front hears it is gone, once") {
  route_server rs;
  auto f = std::make_shared<feed>();
  add_live_route(rs, f);
  auto port = rs.start();
  test::raw_socket s{port};
  auto head = open_live(s);
  CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(head.find("Transfer-Encoding") == std::string::npos);
  CHECK(head.find("Connection: close\r\n\r\nhead;") != std::string::npos);
  // Its head is its answer: nothing is in flight, so a shutdown's drain
  // does not wait for it.
  CHECK(on_loop(rs, [&] { return rs.srv().in_flight(); }) == 0);
  CHECK(on_loop(rs, [&] { return f->out.send("one;"); }));
  CHECK(s.read_for(5s, "one;") == "one;");
  CHECK(on_loop(rs, [&] { return f->out.send("two", true); }));
  CHECK(s.read_until_closed(5s) == "two");
  wait_gone(*f);
  CHECK(f->gone == 1);
  // Over: later parts go nowhere.
  CHECK_FALSE(on_loop(rs, [&] { return f->out.send("after"); }));
  CHECK(f->gone == 1);
}

TEST_CASE("live answer: a client that does not read makes it behind, and "
          "the front hears when it drained") {
  route_server rs;
  auto f = std::make_shared<feed>();
  add_live_route(rs, f);
  auto port = rs.start();
  test::raw_socket s{port};
  open_live(s);
  CHECK_FALSE(on_loop(rs, [&] { return f->out.behind(); }));
  // More than the socket's buffers take: the rest waits in the queue.
  std::string block(32 << 20, 'x');
  CHECK(on_loop(rs, [&] { return f->out.send(block); }));
  CHECK(on_loop(rs, [&] { return f->out.behind(); }));
  auto drained = f->drained.get_future();
  size_t got = 0;
  while (got < block.size()) {
    auto part = s.read_for(1s);
    if (part.empty())
      break;
    got += part.size();
  }
  CHECK(got == block.size());
  CHECK(drained.wait_for(5s) == std::future_status::ready);
  CHECK_FALSE(on_loop(rs, [&] { return f->out.behind(); }));
  CHECK(f->gone == 0);
}

TEST_CASE("live answer: a client that leaves makes it gone, and a stopping "
          "server lets the front say its last words") {
  route_server rs;
  auto left = std::make_shared<feed>();
  auto stays = std::make_shared<feed>();
  stays->last_words = "bye";
  add_live_route(rs, left, "/leaves");
  add_live_route(rs, stays, "/stays");
  auto port = rs.start();
  {
    test::raw_socket s{port};
    open_live(s, "/leaves");
  }
  wait_gone(*left);
  CHECK(left->gone == 1);
  CHECK_FALSE(on_loop(rs, [&] { return left->out.send("late"); }));

  test::raw_socket s{port};
  open_live(s, "/stays");
  on_loop(rs, [&] {
    rs.srv().stop_accepting();
    return true;
  });
  CHECK(s.read_until_closed(5s) == "bye");
  wait_gone(*stays);
  CHECK(stays->gone == 1);
}
