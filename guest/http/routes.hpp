// SPDX-License-Identifier: Apache-2.0
// Routes a front registers on the server (guest/http/server.hpp): the
// transport parses, bounds and authorizes a request, then hands it whole to
// the route that serves its path; the front answers once, from the loop or
// from any actor thread. The transport knows no front's wire.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace allox::http {

class server;

/// A routed request, head and body (the body within max_body).
using route_request =
    boost::beast::http::request<boost::beast::http::string_body>;

/// What a front answers.
struct route_response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  /// More header fields, in order (Content-Type and Server are set).
  std::vector<std::pair<std::string, std::string>> headers;
  /// A streamed answer: the head and `body` go out now, more bytes follow
  /// through responder::more() until its last part, and the connection
  /// closes after it (the body ends with the connection, as HTTP/1.1
  /// allows without a length).
  bool streaming = false;
};

/// Answers one routed request. Thread-safe; the first answer counts, and
/// one given after its connection went away (or the server closed) is
/// dropped.
class responder {
public:
  responder(server* srv, uint64_t ticket,
            std::shared_ptr<const std::atomic<bool>> open)
      : srv_(srv), ticket_(ticket), open_(std::move(open)) {}
  void operator()(route_response response) const;

  /// More of a streamed answer; `last` ends it. Dropped once the client
  /// went away.
  void more(std::string data, bool last = false) const;

  /// False once the answer is complete or its client went away: a front
  /// feeding a stream stops then.
  bool open() const { return open_->load(std::memory_order_relaxed); }

private:
  server* srv_;
  uint64_t ticket_;
  std::shared_ptr<const std::atomic<bool>> open_;
};

/// Serves a request on the loop thread; answers through the responder,
/// at once or later.
using route_fn = std::function<void(const route_request&, responder)>;

/// Who may call a route: anyone (a page of code, a probe) or only bearers
/// of the daemon's token, as the native RPC.
enum class route_access { open, token };

/// Whether a route serves its path alone or everything under it.
enum class route_match { exact, prefix };

struct route {
  boost::beast::http::verb method;
  std::string path;
  route_match match;
  route_access access;
  route_fn serve;
  /// The largest body the route takes (0: the server's max_body); held in
  /// memory whole, so only routes that need more say so.
  size_t max_body = 0;
};

/// The route serving `method` on `target` (the query ignored): an exact
/// path before the longest prefix; null when none does.
const route* find_route(const std::vector<route>& routes,
                        boost::beast::http::verb method,
                        std::string_view target);

} // namespace allox::http
