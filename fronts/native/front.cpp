// SPDX-License-Identifier: Apache-2.0
#include "fronts/native/front.hpp"

#include "fronts/native/envelope.hpp"
#include "guest/http/server.hpp"
#include "messages/rpc.hpp"

#include <caf/send.hpp>

namespace allox::native {

http::route_response json_answer(int status, std::string body) {
  http::route_response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

namespace {

/// A request refused before it reached an action.
http::route_response refusal(int status, std::string_view message,
                             std::string_view code) {
  auto r = json_answer(status, error_body(message, code));
  r.counted_as = http::route_response::tally::rejected;
  return r;
}

/// POST /v1/rpc: one action.
void serve_rpc(const rpc_getter& rpc, const http::route_request& req,
               http::responder answer) {
  auto env = decode_envelope(req.body());
  if (!env)
    return answer(
        refusal(400, message_of(env.error()), code_name(code_of(env.error()))));
  auto handle = rpc();
  if (!handle)
    return answer(refusal(503, "the daemon is not serving", "unavailable"));
  auto action = env->action;
  caf::anon_send(
      handle,
      rpc_request{std::move(env->action), json::value(std::move(env->params)),
                  [answer, action = std::move(action)](rpc_reply reply) {
                    auto r = json_answer(reply.status, std::move(reply.body));
                    r.action = action;
                    answer(std::move(r));
                  }});
}

/// A bulk transfer's step, to the RPC actor.
void hand_on(const rpc_getter& rpc, transfer_request req) {
  if (auto handle = rpc())
    return caf::anon_send(handle, std::move(req));
  auto err = make_error(errc::internal, "the daemon is not serving");
  if (req.answer.begun)
    return req.answer.begun(err);
  if (req.answer.audited)
    req.answer.audited(err);
}

} // namespace

void subscribe(const rpc_getter& rpc, stream_request req) {
  if (auto handle = rpc())
    return caf::anon_send(handle, std::move(req));
  req.reply(
      {503, error_body("the daemon is not serving", "unavailable"), nullptr});
}

void serve_native(http::server& srv, rpc_getter rpc, stream_options stream) {
  http::route r;
  r.method = boost::beast::http::verb::post;
  r.path = "/v1/rpc";
  r.match = http::route_match::exact;
  r.access = http::route_access::token;
  // The prototype served exactly /v1/rpc: with a query, 404 before the
  // token.
  r.bare = true;
  r.serve = [rpc](const http::route_request& req, http::responder answer) {
    serve_rpc(rpc, req, std::move(answer));
  };
  // The prototype's answer to an empty, unsized or oversized body.
  r.length_required = true;
  r.too_large = [] {
    return refusal(400, "invalid request size", "payload_too_large");
  };
  srv.add_route(std::move(r));
  serve_files(srv);
  serve_live_stream(srv, rpc, stream);
  srv.set_transfer(
      [rpc](transfer_request req) { hand_on(rpc, std::move(req)); });
}

} // namespace allox::native
