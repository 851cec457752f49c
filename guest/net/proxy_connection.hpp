// SPDX-License-Identifier: Apache-2.0
// Internal to guest/net/: one proxy connection of the egress broker and
// the session socket it came through, shared by the broker's request
// phase (broker.cpp: header, policy, resolve, connect) and the byte relay
// (relay.cpp). All of it runs on the broker's loop thread.
#pragma once

#include "guest/net/broker.hpp"
#include "guest/net/proxy_request.hpp"
#include "guest/os/unique_fd.hpp"

#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace allox::net::proxy {

inline constexpr uint64_t header_timeout_ms = 30'000;
inline constexpr uint64_t connect_timeout_ms = 15'000;
struct site;

/// One direction of a relayed connection: a pipe between its two sockets
/// (spliced in and out), what it holds, and how far its end has come.
struct direction {
  os::unique_fd r, w;
  size_t capacity = 0;
  size_t queued = 0;
  /// The source sent its end; once the pipe is empty the destination gets
  /// it too (shutdown SHUT_WR, `shut`).
  bool src_eof = false;
  bool shut = false;
};

/// One client connection of a proxy socket, from accept to close.
struct conn {
  site* owner = nullptr;
  std::shared_ptr<const egress_policy> policy;
  uv_tcp_t* client = nullptr;
  uv_tcp_t* upstream = nullptr;
  uv_timer_t* timer = nullptr;
  uv_getaddrinfo_t resolver{};
  uv_connect_t connector{};
  /// Handles not yet closed, and a lookup not yet answered: the conn is
  /// freed when both are none.
  int handles = 0;
  bool resolving = false;
  bool closing = false;
  /// The header block read so far, then the payload that followed it.
  std::string in;
  proxy_request req;
  std::vector<sockaddr_storage> candidates;
  size_t next = 0;
  bool relaying = false;
  /// The relay (relay.cpp): duplicates of both sockets, watched by poll
  /// handles while the libuv streams stay idle, and a pipe each way.
  os::unique_fd client_fd, upstream_fd;
  uv_poll_t* client_poll = nullptr;
  uv_poll_t* upstream_poll = nullptr;
  direction up, down;
  bool audited = false;
  egress_event ev;
  std::chrono::steady_clock::time_point started =
      std::chrono::steady_clock::now();
};

/// One session's proxy socket.
struct site {
  /// Destinations refused whatever the policy (the broker's).
  const std::vector<rule>* forbidden = nullptr;
  uv_tcp_t listener{};
  bool listener_open = false;
  bool closing = false;
  std::shared_ptr<const egress_policy> policy;
  broker::sink events;
  std::shared_ptr<egress_counters> counters;
  std::set<conn*> conns;
};

/// Frees a site once it is closing, its listener closed and no
/// connection is left.
void maybe_free_site(site* s);
/// Frees a connection once its handles are closed and no lookup is
/// pending.
void maybe_free(conn* c);
void on_handle_closed(uv_handle_t* h);
void close_handle(uv_handle_t* h);

/// A zeroed libuv handle counted against the connection's open handles.
template <class Handle>
Handle* new_handle(conn* c) {
  auto* h = static_cast<Handle*>(std::calloc(1, sizeof(Handle)));
  h->data = c;
  ++c->handles;
  return h;
}

/// Closes every handle of the connection (audited once); it is freed once
/// they are.
void finish(conn* c);
/// Answers the client with an error status and closes.
void refuse(conn* c, int status, const std::string& reason);
/// Connected: the tunnel's 200 or the forwarded request, then bytes both
/// ways.
void start_relay(conn* c);

} // namespace allox::net::proxy
