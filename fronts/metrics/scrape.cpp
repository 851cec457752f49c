// SPDX-License-Identifier: Apache-2.0
#include "fronts/metrics/scrape.hpp"

#include "fronts/metrics/actor_metrics.hpp"
#include "guest/http/server.hpp"
#include "messages/rpc.hpp"

#include <caf/send.hpp>

namespace allox::fronts {

namespace {

http::route_response exposition(std::string text) {
  http::route_response r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = std::move(text);
  // A scrape is not one of the requests it reports.
  r.counted_as = http::route_response::tally::none;
  return r;
}

} // namespace

void serve_metrics(http::server& srv, std::function<rpc_actor()> rpc) {
  http::route r;
  r.method = boost::beast::http::verb::get;
  r.path = "/metrics";
  r.match = http::route_match::exact;
  r.access = http::route_access::token;
  // The bare path only, as ever: with a query, GET /metrics is 404.
  r.bare = true;
  r.serve = [&srv, rpc](const http::route_request&, http::responder answer) {
    // The transport's part is read here, on the loop thread that keeps it;
    // the scrape is not one of the requests in flight it reports.
    auto text = srv.transport_metrics(1);
    auto handle = rpc();
    if (!handle) {
      render_actor_metrics(text, nullptr);
      return answer(exposition(std::move(text)));
    }
    // The actors' part is left out (allox_up 0) when the tree does not
    // come.
    caf::anon_send(handle, rpc_request{"system.dump", json::object{},
                                       [answer, text](rpc_reply reply) mutable {
                                         render_actor_metrics(
                                             text, reply.status == 200
                                                       ? reply.stats.get()
                                                       : nullptr);
                                         answer(exposition(std::move(text)));
                                       }});
  };
  srv.add_route(std::move(r));
}

} // namespace allox::fronts
