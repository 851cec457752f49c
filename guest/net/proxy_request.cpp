// SPDX-License-Identifier: Apache-2.0
#include "guest/net/proxy_request.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <cctype>

namespace allox::net {
namespace http = boost::beast::http;

namespace {

proxy_request bad(int status, std::string reason) {
  proxy_request r;
  r.what = proxy_request::state::bad;
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

/// host:port or [v6]:port of a CONNECT target.
bool split_authority(std::string_view target, std::string& host,
                     uint16_t& port) {
  auto colon = target.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == target.size())
    return false;
  auto h = target.substr(0, colon);
  auto p = target.substr(colon + 1);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']')
    h = h.substr(1, h.size() - 2);
  else if (h.find(':') != std::string_view::npos)
    return false;
  if (h.empty() || p.size() > 5 || !std::all_of(p.begin(), p.end(), [](char c) {
        return c >= '0' && c <= '9';
      }))
    return false;
  auto v = std::stoul(std::string{p});
  if (v == 0 || v > 65535)
    return false;
  host = std::string{h};
  port = static_cast<uint16_t>(v);
  return true;
}

bool hop_by_hop(std::string_view name) {
  auto eq = [&](std::string_view s) {
    return name.size() == s.size() &&
           std::equal(name.begin(), name.end(), s.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           });
  };
  return eq("proxy-connection") || eq("proxy-authorization") ||
         eq("connection") || eq("keep-alive");
}

} // namespace

proxy_request parse_proxy_request(std::string_view input) {
  auto end = input.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (input.size() >= max_proxy_header)
      return bad(431, "request header over 64 KiB");
    return {};
  }
  if (end + 4 > max_proxy_header)
    return bad(431, "request header over 64 KiB");
  http::request_parser<http::empty_body> parser;
  parser.header_limit(max_proxy_header);
  parser.eager(false);
  boost::system::error_code ec;
  auto used = parser.put(boost::asio::buffer(input.data(), end + 4), ec);
  if (ec || !parser.is_header_done())
    return bad(400, "not an HTTP request" + (ec ? ": " + ec.message() : ""));
  const auto& req = parser.get();
  proxy_request r;
  r.consumed = used;
  std::string_view target = req.target();
  if (req.method() == http::verb::connect) {
    if (!split_authority(target, r.host, r.port))
      return bad(400, "CONNECT needs host:port");
    r.tunnel = true;
    r.what = proxy_request::state::ready;
    return r;
  }
  auto url = boost::urls::parse_absolute_uri(target);
  if (!url)
    return bad(400, "a proxy request needs an absolute http:// URL or "
                    "CONNECT");
  if (url->scheme() != "http")
    return bad(400, "only http:// is forwarded; use CONNECT for " +
                        std::string{url->scheme()});
  r.host = std::string{url->host_address()};
  if (r.host.size() > 2 && r.host.front() == '[')
    r.host = r.host.substr(1, r.host.size() - 2);
  r.port = url->has_port() ? url->port_number() : 80;
  if (r.host.empty() || r.port == 0)
    return bad(400, "the URL names no host or port");
  std::string origin{url->encoded_path()};
  if (origin.empty())
    origin = "/";
  if (url->has_query())
    origin += "?" + std::string{url->encoded_query()};
  r.head = std::string{req.method_string()} + " " + origin + " HTTP/" +
           std::to_string(req.version() / 10) + "." +
           std::to_string(req.version() % 10) + "\r\n";
  for (const auto& f : req) {
    if (hop_by_hop(f.name_string()))
      continue;
    r.head +=
        std::string{f.name_string()} + ": " + std::string{f.value()} + "\r\n";
  }
  r.head += "Connection: close\r\n\r\n";
  r.what = proxy_request::state::ready;
  return r;
}

} // namespace allox::net
