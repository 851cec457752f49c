// SPDX-License-Identifier: Apache-2.0
// HTTP/1.1 transport on a libuv loop: keep-alive connections, Beast's
// parser and serializer, limits (header, body, idle, header and body time,
// connections; see guest/http/connection.hpp) and the bearer-token check.
// Each request goes whole to the route a front registered for its path
// (routes.hpp); the fronts' answers come back from actor threads through
// the responders. The transport knows no front's wire.
//
// Everything but the responders and the reply functions of await() runs
// on the loop thread.
#pragma once

#include "guest/http/metrics.hpp"
#include "guest/http/routes.hpp"
#include "guest/os/unique_fd.hpp"
#include "messages/errors.hpp"
#include "messages/json.hpp"
#include "messages/rpc.hpp"

#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace allox::http {

struct server_options {
  std::string host = "127.0.0.1";
  uint16_t port = 8092;
  std::string token;
  size_t max_body = 1 << 20;
  size_t max_header = 64 << 10;
  std::chrono::milliseconds idle_timeout{60000};
  /// From the first byte of a request to the end of its head.
  std::chrono::milliseconds header_timeout{10000};
  /// From the end of a request's head to the end of its body.
  std::chrono::milliseconds body_timeout{30000};
  size_t max_connections = 1024;
  /// Most bytes one PUT /v1/files/... may carry (its body).
  uint64_t max_upload = uint64_t{8} << 30;
  /// Most bytes the uploads into one session may carry at once, all its
  /// concurrent PUTs together.
  uint64_t max_session_upload = uint64_t{16} << 30;
  /// A second address serving only GET /metrics and /health, without the
  /// token (for a Prometheus the operator points there); empty: none.
  std::string metrics_host;
  uint16_t metrics_port = 0;
};

/// Begins or ends a bulk transfer (a streamed route's plan); answered
/// through its typed answer.
using transfer_fn = std::function<void(transfer_request)>;

class connection;

/// A reply awaited on the loop thread (server::await).
struct awaited {
  /// Names it for server::cancel.
  uint64_t ticket = 0;
  /// Called at most once, from any thread.
  reply_fn reply;
};

class server final {
public:
  server(uv_loop_t* loop, server_options opts);
  ~server();

  /// Where bulk transfers begin and end (without it, a transfer is
  /// refused as `unsupported`).
  void set_transfer(transfer_fn fn) { transfer_ = std::move(fn); }

  /// A front serves `r.path` from now on; before listen() only (requests
  /// keep a pointer to their route). A path taken twice is a bug: thrown.
  void add_route(route r);

  /// Requests whose Host `claims` accepts go to `serve` on their head
  /// alone, whatever their method and target: it answers (a refusal) or
  /// tunnels the connection to a socket (responder::tunnel). Before
  /// listen() only; `claims` runs on the loop thread and must be quick.
  void set_host_route(std::function<bool(std::string_view host)> claims,
                      route_fn serve);
  /// The host route claiming `host`, if any.
  const route* host_route(std::string_view host) const {
    return host_claims_ && host_claims_(host) ? &host_route_ : nullptr;
  }

  /// Binds and listens; the error names the address.
  caf::error listen();

  /// The bound port (useful with port 0).
  uint16_t port() const { return bound_port_; }

  /// The bound port of the metrics address (0: none).
  uint16_t metrics_port() const { return metrics_bound_port_; }

  /// Thread-safe: runs `task` on the loop thread soon (never once the
  /// server closed): how a front's feed takes news from actor threads.
  void run_on_loop(std::function<void()> task);

  /// The loop the server runs on, for a front's own handles.
  uv_loop_t* loop() const { return loop_; }

  /// Stops accepting new connections; in-flight requests still complete.
  void stop_accepting();

  /// Requests dispatched and not yet answered (a live answer's head is
  /// its answer).
  size_t in_flight() const { return tickets_.size() - live_; }

  /// Connections closed to make room for new ones at the limit.
  uint64_t evicted() const { return evicted_; }

  /// True once stop_accepting() was called (live answers end then).
  bool stopping() const { return !listening_; }

  /// Closes every connection and the wake-up handle; after this, answers
  /// are dropped. The loop can then run to completion.
  void close();

  // -- used by connections ----------------------------------------------------
  const server_options& options() const { return opts_; }
  /// A reply for a caller on the loop thread: once the returned function
  /// is called (from any thread), `deliver` runs on the loop thread,
  /// unless the ticket was cancelled or `conn` (if any) closed first.
  /// For callers that are not routes (the in-guest event endpoint) and
  /// for a route's front waiting on the loop thread (the live stream's
  /// subscription). With an `action`, the request metrics count the
  /// reply under it.
  awaited await(connection* conn, std::function<void(rpc_reply)> deliver,
                std::string action = {});
  /// Forgets a request whose caller went away.
  void cancel(uint64_t ticket) {
    if (auto it = tickets_.find(ticket); it != tickets_.end())
      drop_ticket(it);
  }
  const route* find_route(boost::beast::http::verb method,
                          std::string_view target) const {
    return http::find_route(routes_, method, target);
  }
  /// Hands a request to its route; answered through post_routed.
  void serve_route(connection* conn, const route& r, route_request req);
  /// Thread-safe: queues a routed request's answer (or, `more`, a later
  /// part of a streamed one) and wakes the loop.
  void post_routed(uint64_t ticket, route_response response, bool more = false,
                   bool last = false);
  /// Thread-safe: a streamed route's request goes ahead as `plan` says.
  void post_plan(uint64_t ticket, transfer_plan plan);
  /// Thread-safe: a host route's request is tunnelled to `socket`.
  void post_tunnel(uint64_t ticket, int socket);
  /// responder::live and live_answer (loop thread).
  live_answer open_live(uint64_t ticket, route_response head, live_hooks hooks);
  bool live_send(uint64_t ticket, std::string data, bool last);
  bool live_behind(uint64_t ticket);
  /// The transport's part of GET /metrics (request metrics and server
  /// gauges), in the text exposition format; `own` requests of the
  /// caller's (a scrape's own) are left out of the in-flight gauge.
  std::string transport_metrics(size_t own = 0) const;
  /// Counts a request refused before it reached an action.
  void count_rejected(int status) { metrics_.rejected(status); }
  /// Sends a transfer's begin or end to its session; the answer comes
  /// back to `conn` on the loop (unless it closed first).
  void transfer(connection* conn, cmd::file_transfer_begin step);
  void transfer(connection* conn, cmd::file_transfer_end step);
  /// Counts `bytes` more against a session's uploads in flight; false
  /// (and nothing counted) when that passes max_session_upload.
  bool charge_upload(const std::string& session, uint64_t bytes);
  /// An upload ended: its bytes no longer count.
  void release_upload(const std::string& session, uint64_t bytes);
  void forget(connection* conn);

private:
  static void on_connection(uv_stream_t* listener, int status);
  static void on_metrics_connection(uv_stream_t* listener, int status);
  void accept(uv_stream_t* listener, bool metrics_only);
  /// Binds and listens on host:port; returns the bound port.
  expected<uint16_t> bind(uv_tcp_t& handle, const std::string& host,
                          uint16_t port, uv_connection_cb cb);
  static void on_wakeup(uv_async_t* async);
  void deliver_replies();
  /// A ticket held for `conn` (null: a caller that is no connection), and
  /// how an answer gets back to it: `back(task)`, from any thread, runs
  /// `task` on the loop with the connection once, unless the ticket was
  /// cancelled or the connection closed first. await() and the transfer
  /// steps are built on it.
  struct held {
    uint64_t ticket;
    std::function<void(std::function<void(connection*)>)> back;
  };
  held hold(connection* conn);
  /// Counts a routed answer in the request metrics.
  void observe(const std::string& route_path, const route_response& response,
               std::chrono::steady_clock::time_point started);

  uv_loop_t* loop_;
  server_options opts_;
  transfer_fn transfer_;
  /// agent/session -> bytes of its uploads in flight.
  std::unordered_map<std::string, uint64_t> uploads_;
  uv_tcp_t listener_{};
  bool listening_ = false;
  uv_tcp_t metrics_listener_{};
  bool metrics_listening_ = false;
  uint16_t metrics_bound_port_ = 0;
  uv_async_t wakeup_{};
  uint16_t bound_port_ = 0;
  uint64_t next_ticket_ = 1;
  uint64_t evicted_ = 0;
  /// Live answers among tickets_: answered (their head is out), so not
  /// in flight.
  size_t live_ = 0;
  /// A request handed to a front or the actors, until its answer.
  struct pending {
    /// Null for callers that are not HTTP connections.
    connection* conn = nullptr;
    /// A routed request's route path: what its metrics count it under
    /// unless its answer names the action (empty for held tickets).
    std::string path;
    std::chrono::steady_clock::time_point started;
    /// A routed request's: true until its answer is complete or its
    /// client went away (what responder::open() reads).
    std::shared_ptr<std::atomic<bool>> open;
    /// A routed answer whose head went out and whose body is streaming.
    bool streaming = false;
    /// A live answer's hooks (responder::live).
    std::shared_ptr<live_hooks> live;
  };
  /// A routed answer or a later part of a streamed one.
  struct routed_part {
    uint64_t ticket;
    route_response response;
    bool more = false;
    bool last = false;
    /// Set: a streamed route's plan, not an answer.
    std::shared_ptr<transfer_plan> plan;
    /// Set: a host route's socket, not an answer.
    std::shared_ptr<os::unique_fd> tunnel;
  };
  /// Ends a streamed answer at shutdown: a live answer's front says its
  /// last words (if it has any), then the connection closes.
  void stop_live(uint64_t ticket);
  /// Forgets a ticket; a routed one's responder sees it closed.
  void drop_ticket(std::unordered_map<uint64_t, pending>::iterator it);
  std::unordered_map<uint64_t, pending> tickets_;
  std::vector<route> routes_;
  std::function<bool(std::string_view)> host_claims_;
  route host_route_;
  request_metrics metrics_;
  std::unordered_map<connection*, std::unique_ptr<connection>> connections_;

  // guards routed_, tasks_ and closed_ (actor threads)
  std::mutex mtx_;
  std::deque<routed_part> routed_;
  std::deque<std::function<void()>> tasks_;
  bool closed_ = false;
};

/// Splits HOST:PORT at the last colon; accepts [v6]:port.
expected<std::pair<std::string, uint16_t>> parse_listen(const std::string& s);

/// True for addresses that never leave the machine.
bool is_loopback_host(const std::string& host);

/// Constant-time comparison of the Authorization header with the token.
bool token_matches(std::string_view header, std::string_view token);

/// Constant-time comparison of a presented secret with the expected one
/// (an empty secret matches nothing).
bool secret_matches(std::string_view given, std::string_view secret);

} // namespace allox::http
