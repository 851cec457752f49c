// SPDX-License-Identifier: Apache-2.0
// Port forwarding: a request whose Host is `<port>-<sandbox>.<domain>` (what
// the SDK's getHost(port) builds) reaches that port of the sandbox, as
// E2B's edge routes it. The transport gives this front such requests on
// their head alone (server::set_host_route); the session connects to the
// port inside the network namespace its processes are in (port.connect),
// and the transport tunnels the connection there: HTTP, keep-alive and
// WebSocket upgrades alike.
//
//   Host claimed (shape only, loop thread) -> e2b_call -> sandbox running?
//   -> credentials (the daemon's token rule) -> SESSION port.connect
//   -> socket -> responder.tunnel -> bytes both ways
#include "fronts/e2b/handlers.hpp"

#include "guest/http/server.hpp"
#include "messages/commands/network.hpp"

#include <cctype>

namespace allox::e2b {

std::optional<port_host> parse_port_host(std::string_view host) {
  // <port>-<id>.<domain>[:listener port]
  auto dash = host.find('-');
  if (dash == 0 || dash == std::string_view::npos || dash > 5)
    return std::nullopt;
  uint32_t port = 0;
  for (auto c : host.substr(0, dash)) {
    if (c < '0' || c > '9')
      return std::nullopt;
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port == 0 || port > 65535)
    return std::nullopt;
  auto rest = host.substr(dash + 1);
  auto dot = rest.find('.');
  if (dot == std::string_view::npos || dot + 1 == rest.size())
    return std::nullopt;
  auto id = rest.substr(0, dot);
  // Only ids of the shape this front gives (new_sandbox_id): a host of
  // another shape is never taken from the daemon's own routes.
  if (id.size() != sandbox_id_size || id.front() != 'i')
    return std::nullopt;
  for (auto c : id.substr(1))
    if (!std::isxdigit(static_cast<unsigned char>(c)) ||
        std::isupper(static_cast<unsigned char>(c)))
      return std::nullopt;
  return port_host{static_cast<uint16_t>(port), std::string{id}};
}

namespace {

/// E2B's answer when the edge cannot reach a sandbox's port.
void answer_unreachable(const http::responder& r, const std::string& id,
                        uint16_t port, const std::string& why) {
  json::object body{
      {"sandboxId", id}, {"port", port}, {"code", 502}, {"message", why}};
  r({502, "application/json", json::serialize(body), {}});
}

/// The daemon's token rule for a sandbox's port: with a token, the request
/// carries it (X-API-Key or a bearer Authorization) or the sandbox's access
/// token as E2b-Traffic-Access-Token; without one, the listener is
/// loopback and anyone on the machine may.
bool may_reach(front_self self, const request& req, const sandbox& sb) {
  const auto& token = self->state.init.token;
  if (token.empty())
    return true;
  if (http::secret_matches(req.header("X-API-Key"), token) ||
      http::token_matches(req.header("Authorization"), token))
    return true;
  return http::secret_matches(req.header("E2b-Traffic-Access-Token"),
                              sb.access_token);
}

} // namespace

void serve_port(front_self self, request& req, const port_host& where) {
  auto answer = req.answer();
  auto it = self->state.sandboxes.find(where.id);
  if (it == self->state.sandboxes.end())
    return answer_unreachable(answer, where.id, where.port,
                              "The sandbox was not found");
  const auto& sb = it->second;
  if (!may_reach(self, req, sb))
    return answer_error(answer, 401,
                        "a sandbox's port needs X-API-Key (the daemon's "
                        "token) or E2b-Traffic-Access-Token");
  if (sb.paused || sb.ending)
    return answer_unreachable(answer, sb.id, where.port,
                              "The sandbox is " +
                                  std::string{sb.paused ? "paused" : "ending"});
  cmd::port_connect c;
  c.port = where.port;
  auto id = sb.id;
  auto port = where.port;
  call_session(
      self, sb.agent, sb.id, c,
      [answer](socket_handle& s) { answer.tunnel(s.take()); },
      [answer, id, port](caf::error& err) {
        answer_unreachable(answer, id, port, message_of(err));
      });
}

} // namespace allox::e2b
