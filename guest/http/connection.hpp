// SPDX-License-Identifier: Apache-2.0
// One HTTP/1.1 connection of the server (guest/http/server.hpp): reads and
// parses requests one at a time, hands them to the server, and writes the
// answers: whole, streamed, bulk transfers and tunnels.
//
// What a hostile or broken peer can cost is bounded:
// - input: at most one request is served at a time; while it is, reading
//   stops once `pause_input` bytes of later (pipelined) requests wait, and
//   resumes when they can be parsed;
// - output: one response at a time; a pipelined request waits while more
//   than `max_unread_output` bytes of earlier answers sit unacknowledged in
//   the socket (the peer is not reading them); a live answer's front is
//   told when more than `max_stream_queue` bytes wait for the peer and
//   when they drained;
// - time: a request head must arrive within header_timeout of its first
//   byte and its body within body_timeout of the head (a trickling peer
//   cannot reset the clock byte by byte), a peer that does not read our
//   response is idle, and an idle connection closes after idle_timeout;
// - slots: at the connection limit the least recently active connection
//   that holds no work of the daemon (idle, trickling or stalled) makes
//   room for the newcomer, so /health and new clients are still served.
//
// Everything here runs on the loop thread.
#pragma once

#include "guest/http/routes.hpp"
#include "guest/os/unique_fd.hpp"
#include "messages/json.hpp"
#include "messages/results/files.hpp"

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace allox::http {

class server;
struct bulk_transfer;

class connection {
public:
  using clock_type = std::chrono::steady_clock;

  /// Unparsed input that stops reading while a request is being served.
  static constexpr size_t pause_input = 64 << 10;
  /// Queued output above which a live answer's front holds back.
  static constexpr size_t max_stream_queue = 1 << 20;
  /// Answers left unread by the peer (SIOCOUTQ) above which pipelined
  /// requests wait: without it a client that never reads gets every
  /// request the kernel buffered served, into every buffer between us.
  static constexpr int max_unread_output = 256 << 10;
  /// How often a connection waiting for its peer to read looks again.
  static constexpr std::chrono::milliseconds unread_recheck{10};

  /// `metrics_only`: accepted on the metrics address (--metrics-listen),
  /// which serves GET /metrics and /health only, without the token.
  connection(server* srv, uv_loop_t* loop, bool metrics_only = false);
  ~connection();

  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(&tcp_); }

  void start();

  /// The answer of a front's route (the head of a streamed one).
  void answer_route(route_response response);
  /// A streamed route's request goes ahead as its front planned.
  void begin_planned(transfer_plan plan);
  /// A request whose Host a front claims is tunnelled to `upstream`
  /// (tunnel.cpp).
  void start_tunnel(os::unique_fd upstream);
  /// More of a streamed route answer; the connection closes after `last`.
  void answer_route_part(std::string data, bool last);

  /// Rejects the connection outright (too many connections, none to evict).
  void refuse();

  /// Still counted against the connection limit.
  bool active() const { return !lingering_ && !closing_; }

  /// True when closing this connection loses no work of the daemon: it is
  /// idle, receiving a request, or stuck writing to a peer that does not
  /// read. Streams and requests being served are never evicted.
  bool evictable() const;

  /// Last time the peer sent or took bytes (or the connection opened).
  clock_type::time_point last_activity() const { return last_activity_; }

  void close();

  /// A live answer's client is behind (live_answer::behind); its front
  /// hears when it drained.
  bool live_behind();

private:
  struct write_req;

  // -- input --------------------------------------------------------------
  static void on_alloc(uv_handle_t*, size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  void reset_parser();
  void process();
  bool check_header();
  template <class Request>
  bool authorized(const Request& req);
  void handle_request();
  size_t pending_input() const { return input_.size() - consumed_; }
  /// Drops parsed input (all of it, or a prefix once it is large).
  void compact_input();
  void update_reading();
  /// The socket's descriptor (-1 once closed).
  int socket_fd() const;
  /// Whether more than max_unread_output bytes of our answers wait for
  /// the peer; a drop since the last look counts as write progress
  /// (deadlines.cpp, with everything else about time).
  bool peer_behind();

  // -- deadlines ----------------------------------------------------------
  static void on_deadline(uv_timer_t* t);
  void arm_deadline();
  /// When the connection must next make progress, and what to do then.
  enum class overdue { none, idle, head, body, stalled_write, unread };
  std::pair<clock_type::time_point, overdue> next_deadline() const;

  /// The largest body route `r` (or a request of no route) takes.
  size_t limit_of(const route* r) const;
  /// Sets the body limit of route `r`'s request (or of one of no route),
  /// or refuses a declared length over it, or none where `r` requires
  /// one; false when refused.
  bool body_fits(const route* r);
  /// Refuses a body over `limit` (or one route `r` requires a length of)
  /// as `r` says, else with 413; the connection closes after it.
  void refuse_size(const route* r, std::optional<uint64_t> declared,
                   size_t limit);

  // -- output -------------------------------------------------------------
  void reject(int status, std::string_view message, std::string_view code);
  void respond(int status, std::string body, bool close_after,
               std::string_view content_type = "application/json",
               const std::vector<std::pair<std::string, std::string>>* headers =
                   nullptr);
  void send(std::string data, bool last);
  static void on_written(uv_write_t* req, int status);
  void linger();
  static void on_linger_timeout(uv_timer_t* t);

  // -- bulk file transfers (transfer.cpp) ---------------------------------
  /// A streamed route's head: its front answers or plans the transfer.
  void plan_transfer(const route& r);
  /// Checks the head against the upload limits, then asks the session.
  void begin_transfer();
  /// Answers a transfer's error, in its front's shape when it has one.
  void transfer_error(const caf::error& err, bool close_after);
  /// Answers an error before any body byte was read, and ends the
  /// transfer.
  void refuse_transfer(const caf::error& err);
  /// A download's request declared a body (never read).
  bool body_unread() const;
  /// The session's answer to the transfer's begin: where the bytes go.
  void on_transfer_begun(expected<transfer_begun> begun);
  /// The session's answer to the transfer's end: audited, or why not.
  void on_transfer_ended(caf::error err);
  bool transfer_wants_input() const;
  /// Hands buffered body bytes to the worker while its queue has room.
  void feed_upload();
  /// Lends the next read the upload's buffer (a declared length, nothing
  /// buffered): the socket's bytes then go to the worker as they are,
  /// without passing through input_. False: read as any other request.
  bool lend_upload_buffer(uv_buf_t* buf);
  /// `buf` is the lent buffer.
  bool is_lent(const uv_buf_t* buf) const;
  /// `n` more body bytes are in the upload's buffer: queued once it is
  /// full, or at once while the worker waits.
  void received(size_t n);
  /// Queues the upload's buffer, as far as it is filled.
  void hand_on_body();
  /// Queues what the buffer holds and tells the worker the body is whole.
  void end_of_body();
  /// Answered once the worker has cleaned up.
  void fail_transfer(caf::error why);
  /// The worker made progress (loop thread).
  void on_transfer_wake();
  /// Writes a download's head and the chunks the worker queued.
  void pump_download();
  /// Every byte moved: the session audits the transfer.
  void end_of_bytes();
  /// Back to serving requests.
  void end_transfer();

  // -- a tunnel to a sandbox's port (tunnel.cpp) --------------------------
  /// A request whose Host a front claims: the front gets its head.
  void plan_tunnel(const route& r);
  void to_upstream(std::string data);
  /// Client bytes for the port: a request's body as far as it goes.
  void from_client(std::string_view data);
  static void on_up_written(uv_write_t* req, int status);
  static void on_up_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  /// Reads the upstream while the client's write queue is short.
  void update_upstream_reading();
  /// A write to the client completed.
  void tunnel_wrote();
  /// The client sent its last byte.
  void client_ended();

  static void on_closed(uv_handle_t* h);

  server* srv_;
  bool metrics_only_ = false;
  uv_tcp_t tcp_{};
  /// The linger period.
  uv_timer_t timer_{};
  /// Idle, header, body and write-stall deadlines.
  uv_timer_t deadline_{};
  int pending_closes_ = 0;

  std::optional<
      boost::beast::http::request_parser<boost::beast::http::string_body>>
      parser_;
  /// Received bytes; those before consumed_ are parsed already (erasing
  /// from the front per request made pipelining quadratic).
  std::string input_;
  size_t consumed_ = 0;
  bool reading_ = false;
  bool header_checked_ = false;
  bool keep_alive_ = true;
  /// The route of the request being read, once its head was checked.
  const route* route_ = nullptr;
  /// A request is being served by the daemon.
  bool waiting_ = false;
  /// A response is being written (one at a time).
  bool writing_ = false;
  /// Pipelined requests wait for the peer to read our answers.
  bool behind_ = false;
  /// Unread bytes at the last look while behind_.
  int unread_ = 0;
  /// Stream writes queued and not yet completed.
  size_t stream_writes_ = 0;
  bool closing_ = false;
  bool refused_ = false;
  bool lingering_ = false;
  size_t lingered_ = 0;

  clock_type::time_point last_activity_;
  /// No such moment (yet).
  static constexpr clock_type::time_point never = clock_type::time_point::max();
  /// First byte of the request being received; never when none.
  clock_type::time_point request_started_ = never;
  /// The request head was complete; never when not yet.
  clock_type::time_point head_done_ = never;
  /// Last time a write completed or started on an empty queue.
  clock_type::time_point write_progress_;

  /// A streamed route answer without a Content-Length goes out in chunks
  /// (its end is the last chunk, not only the connection's close), unless
  /// its front frames its own.
  bool chunked_ = false;
  /// A live answer's hooks (server::open_live).
  std::shared_ptr<live_hooks> live_;
  /// Its front was told the client is behind and waits for `drained`.
  bool drain_wanted_ = false;

  /// The bulk transfer being served (none: an ordinary request).
  std::unique_ptr<bulk_transfer> bulk_;

  /// planning: the front decides; open: bytes go both ways.
  enum class tunnel_phase { none, planning, open };
  tunnel_phase tunnel_ = tunnel_phase::none;
  /// The request's head as it goes to the port.
  std::string tunnel_head_;
  /// The socket to the port (closed with the connection once opened).
  uv_tcp_t up_{};
  bool up_open_ = false;
  bool up_reading_ = false;
  bool up_ended_ = false;
  bool client_ended_ = false;
  /// Body bytes of the tunnelled request still to pass (npos: all bytes,
  /// an upgrade's stream). The client's later requests never pass: the
  /// port gets one request per connection.
  uint64_t tunnel_left_ = 0;

  friend class server;
};

} // namespace allox::http
