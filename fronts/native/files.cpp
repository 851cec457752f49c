// SPDX-License-Identifier: Apache-2.0
// PUT and GET /v1/files/{agent}/{session}/{path} (docs/rpc.md, "Bulk file
// transfer"): the native front's streamed routes. Served on the head: the
// target names the session and the path, a tar Content-Type says the body
// is a directory's stream; the transport then moves the bytes (guest/http/
// transfer.cpp) and this file answers in the native envelope.
#include "fronts/native/front.hpp"

#include "guest/http/server.hpp"
#include "messages/rpc.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <string>
#include <vector>

namespace allox::native {

namespace {

namespace bhttp = boost::beast::http;

/// An error in the native envelope: 413 for limits, else as in RPC.
http::route_response failure(const caf::error& err) {
  auto code = code_of(err);
  return json_answer(code == errc::payload_too_large ? 413 : http_status(code),
                     error_body(message_of(err), code_name(code)));
}

void plan_files(const http::route_request& head, http::responder answer) {
  auto url = boost::urls::parse_origin_form(
      std::string_view{head.target().data(), head.target().size()});
  std::vector<std::string> segs;
  if (url)
    for (auto s : url->segments())
      segs.push_back(s);
  if (segs.size() < 4) {
    auto r = failure(
        make_error(errc::invalid_argument,
                   "target must be /v1/files/{agent}/{session}/{path}"));
    r.counted_as = http::route_response::tally::rejected;
    return answer(std::move(r));
  }
  http::transfer_plan plan;
  plan.agent_id = segs[2];
  plan.session_id = segs[3];
  for (size_t i = 4; i < segs.size(); ++i)
    plan.path += (i > 4 ? "/" : "") + segs[i];
  plan.origin = "http";
  plan.upload = head.method() == bhttp::verb::put;
  plan.tar = plan.upload &&
             head[bhttp::field::content_type].starts_with("application/x-tar");
  plan.directories = true;
  plan.name_files = false;
  plan.counted = false;
  plan.done = [](const json::object& result) {
    return json_answer(200, ok_body(json::serialize(result)));
  };
  plan.failed = failure;
  answer.begin(std::move(plan));
}

} // namespace

void serve_files(http::server& srv) {
  for (auto method : {bhttp::verb::put, bhttp::verb::get}) {
    http::route r;
    r.method = method;
    r.path = "/v1/files/";
    r.match = http::route_match::prefix;
    r.access = http::route_access::token;
    r.serve = plan_files;
    r.streamed = true;
    srv.add_route(std::move(r));
  }
}

} // namespace allox::native
