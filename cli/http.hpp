// SPDX-License-Identifier: Apache-2.0
// alloxctl's connection to the daemon: blocking HTTP/1.1 over one
// keep-alive connection (Boost.Beast), the RPC envelope turned into
// result<json::value>, and the live stream read as server-sent events.
// Failures are values; a daemon that cannot be reached is one failure with
// one line of text.
#pragma once

#include "cli/result.hpp"

#include <boost/json.hpp>

#include <csignal>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace allox::ctl {

namespace json = boost::json;

/// Where the daemon listens, from a URL like http://127.0.0.1:8092.
struct endpoint {
  std::string host;
  std::string port;
  /// The URL as given, for messages.
  std::string url;
};

/// Parses `http://HOST[:PORT][/]` (IPv6 hosts in brackets); other schemes
/// and paths are refused.
result<endpoint> parse_url(const std::string& url);

struct http_reply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;
};

/// One server-sent event.
struct sse_event {
  std::string event;
  std::string data;
  std::string id;
};

class client {
public:
  client(endpoint where, std::string token);
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// POST /v1/rpc. The result on `ok: true`; otherwise the daemon's error
  /// and code, `exit_unsupported` for an action the daemon does not know,
  /// `exit_unreachable` when there is no daemon to ask.
  result<json::value> rpc(const std::string& action,
                          const json::object& params = {});

  /// A plain GET (e.g. /metrics) on the shared connection.
  result<http_reply> get(const std::string& target);

  /// POST a JSON body to `target` with more header fields (an MCP
  /// endpoint: Accept, Mcp-Session-Id); the reply whatever its status.
  result<http_reply> post(const std::string& target, const std::string& body,
                          const std::map<std::string, std::string>& headers) {
    return send("POST", target, body, headers);
  }

  /// PUT `target` with the local file at `path` as its body, streamed
  /// from disk (bulk transfer, /v1/files/...); the daemon's reply.
  /// `application/x-tar` makes the daemon unpack it as a directory.
  result<http_reply>
  put_file(const std::string& target, const std::string& path,
           const std::string& content_type = "application/octet-stream");

  /// GET `target` into the local file at `path`, streamed to disk when
  /// the daemon answers 200; otherwise the reply (its error body) and
  /// the file untouched.
  result<http_reply> get_file(const std::string& target,
                              const std::string& path);

  /// GET `target` as a live stream on a connection of its own; calls
  /// `on_event` for every event until it returns false, the daemon closes
  /// the stream, or `*interrupt` becomes non-zero (checked at least every
  /// 200 ms). The result says whether the stream ended by the daemon's
  /// close (true) or by the caller or an interrupt (false).
  result<bool> stream(const std::string& target,
                      const std::map<std::string, std::string>& headers,
                      const std::function<bool(const sse_event&)>& on_event,
                      const volatile std::sig_atomic_t* interrupt);

  const endpoint& where() const { return where_; }

private:
  result<http_reply>
  send(const std::string& method, const std::string& target,
       const std::string& body,
       const std::map<std::string, std::string>& headers = {});
  failure unreachable(const std::string& why) const;

  struct impl;
  std::unique_ptr<impl> impl_;
  endpoint where_;
  std::string token_;
};

/// The daemon's error envelope turned into a failure (`action` names the
/// request in messages).
failure daemon_failure(const std::string& action, const http_reply& reply);

} // namespace allox::ctl
