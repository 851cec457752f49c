// SPDX-License-Identifier: Apache-2.0
// The request a client sends the in-namespace proxy, before any byte goes
// upstream: `CONNECT host:port` (a tunnel, TLS inside) or an absolute-form
// plain-HTTP request (`GET http://host[:port]/path HTTP/1.1`), which is
// forwarded in origin form without its proxy headers and with
// `Connection: close`, so one client connection carries requests to one
// destination only. Parsed with Beast's HTTP parser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace allox::net {

/// Most bytes of a request's header block.
inline constexpr size_t max_proxy_header = 64 * 1024;

struct proxy_request {
  enum class state {
    incomplete, ///< the header block has not ended yet
    ready,
    bad, ///< answered with `status` and `reason`, then closed
  };
  state what = state::incomplete;
  bool tunnel = false; ///< CONNECT
  std::string host;    ///< a name or a literal address, without brackets
  uint16_t port = 0;
  /// For a forwarded request: the header block to send upstream.
  std::string head;
  /// Bytes of the input taken by the header block; the rest is payload.
  size_t consumed = 0;
  int status = 0;
  std::string reason;
};

/// Parses the start of a client's stream (everything received so far).
proxy_request parse_proxy_request(std::string_view input);

} // namespace allox::net
