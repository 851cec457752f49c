// SPDX-License-Identifier: Apache-2.0
// Beast messages to bytes, for the connection's single-write replies and
// the head of a live stream.
#pragma once

#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/serializer.hpp>

#include <string>

namespace allox::http {

/// Serializes a message (or only its head, with `head_only`) into one
/// string.
template <bool isRequest, class Body, class Fields>
std::string serialize(boost::beast::http::message<isRequest, Body, Fields>& msg,
                      bool head_only) {
  namespace beast = boost::beast;
  beast::http::serializer<isRequest, Body, Fields> sr{msg};
  sr.split(head_only);
  std::string out;
  beast::error_code ec;
  do {
    sr.next(ec, [&](beast::error_code&, const auto& buffers) {
      auto text = beast::buffers_to_string(buffers);
      out += text;
      sr.consume(text.size());
    });
  } while (!ec && !(head_only ? sr.is_header_done() : sr.is_done()));
  return out;
}

} // namespace allox::http
