// SPDX-License-Identifier: Apache-2.0
// A connection's answers to a front's routes (routes.hpp): whole, streamed
// in parts, or, for a streamed route whose front refused it before its
// body was read, a refusal that ends the planned transfer.
#include "guest/http/connection.hpp"

#include "guest/http/transfer.hpp"
#include "guest/http/wire.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>

#include <cstdio>
#include <string>
#include <utility>

namespace allox::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {

/// One chunk of a chunked body (an empty one is the end).
std::string chunk(std::string_view data) {
  char size[20];
  auto n = std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  std::string out(size, static_cast<size_t>(n));
  out.append(data).append("\r\n");
  return out;
}

} // namespace

void connection::answer_route(route_response response) {
  if (response.streaming) {
    // Still waiting: nothing else is read, and the connection is neither
    // idle nor evictable until the last part; a peer not reading stalls.
    bhttp::response<bhttp::empty_body> res{
        static_cast<bhttp::status>(response.status), 11};
    res.set(bhttp::field::content_type, response.content_type);
    res.set(bhttp::field::cache_control, "no-cache");
    res.set(bhttp::field::server, "allox-workspace-daemon");
    bool sized = false;
    for (const auto& [name, value] : response.headers) {
      res.insert(name, value);
      sized = sized || beast::iequals(name, "Content-Length");
    }
    // Unsized, the body is chunked (unless its front frames its own): a
    // client that stops reading for a while and then sees the connection
    // close can still tell a complete body from a cut one.
    chunked_ = !sized && response.chunked;
    if (chunked_)
      res.chunked(true);
    res.keep_alive(false);
    auto first = chunked_ && !response.body.empty() ? chunk(response.body)
                                                    : std::move(response.body);
    send(serialize(res, true) + first, false);
    arm_deadline();
    return;
  }
  waiting_ = false;
  if (tunnel_ == tunnel_phase::planning) {
    // The front refused the tunnel: whatever the request sent stays
    // unread.
    tunnel_ = tunnel_phase::none;
    respond(response.status, std::move(response.body), true,
            response.content_type, &response.headers);
    return;
  }
  if (bulk_ && bulk_->step == bulk_transfer::phase::planning) {
    // A streamed route's front refused it: an upload's body stays unread.
    respond(response.status, std::move(response.body),
            bulk_->upload || body_unread() || !keep_alive_,
            response.content_type, &response.headers);
    end_transfer();
    return;
  }
  respond(response.status, std::move(response.body),
          response.close || !keep_alive_, response.content_type,
          &response.headers);
  arm_deadline();
}

void connection::answer_route_part(std::string data, bool last) {
  if (closing_ || lingering_)
    return;
  if (data.empty() && !last)
    return;
  if (chunked_) {
    auto framed = data.empty() ? std::string{} : chunk(data);
    if (last)
      framed += "0\r\n\r\n";
    data = std::move(framed);
  }
  send(std::move(data), last);
  arm_deadline();
}

} // namespace allox::http
