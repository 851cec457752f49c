// SPDX-License-Identifier: Apache-2.0
#include "guest/http/connection.hpp"

#include "guest/http/server.hpp"
#include "guest/http/transfer.hpp"
#include "guest/http/wire.hpp"
#include "messages/rpc.hpp"

#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <utility>

namespace allox::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {

// A closing connection first half-closes and reads (and drops) what the
// client is still sending, so a client in the middle of a large request
// reads our response instead of a connection reset.
constexpr size_t linger_limit = 4 << 20;
constexpr uint64_t linger_ms = 2000;

} // namespace

struct connection::write_req {
  uv_write_t req;
  std::string data;
  connection* conn;
  bool close_after;
  bool stream = false;
};

connection::connection(server* srv, uv_loop_t* loop, bool metrics_only)
    : srv_(srv), metrics_only_(metrics_only) {
  uv_tcp_init(loop, &tcp_);
  tcp_.data = this;
  uv_timer_init(loop, &timer_);
  timer_.data = this;
  uv_timer_init(loop, &deadline_);
  deadline_.data = this;
  last_activity_ = write_progress_ = clock_type::now();
  reset_parser();
}

connection::~connection() = default;

void connection::start() {
  uv_tcp_nodelay(&tcp_, 1);
  update_reading();
  arm_deadline();
}

bool connection::live_behind() {
  if (closing_ || lingering_)
    return true; // nothing more can go: the front holds back until gone
  drain_wanted_ = uv_stream_get_write_queue_size(stream()) > max_stream_queue;
  return drain_wanted_;
}

void connection::refuse() {
  refused_ = true;
  respond(503, error_body("too many connections", "unavailable"), true);
}

int connection::socket_fd() const {
  uv_os_fd_t fd = -1;
  return uv_fileno(reinterpret_cast<const uv_handle_t*>(&tcp_), &fd) == 0 ? fd
                                                                          : -1;
}

void connection::close() {
  if (closing_)
    return;
  closing_ = true;
  if (reading_)
    uv_read_stop(stream());
  reading_ = false;
  uv_timer_stop(&timer_);
  uv_timer_stop(&deadline_);
  pending_closes_ = 3;
  if (bulk_) {
    srv_->release_upload(bulk_->session_key, bulk_->charged);
    bulk_->charged = 0;
    if (bulk_->channel)
      bulk_->channel->close();
    // A worker sending a file holds the socket too: ending it here makes
    // its next write fail at once.
    if (int fd = socket_fd(); bulk_->handed_over && fd >= 0)
      ::shutdown(fd, SHUT_RDWR);
  }
  if (up_open_) {
    ++pending_closes_;
    uv_close(reinterpret_cast<uv_handle_t*>(&up_), on_closed);
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), on_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&deadline_), on_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), on_closed);
}

void connection::on_closed(uv_handle_t* h) {
  auto* self = static_cast<connection*>(h->data);
  if (--self->pending_closes_ == 0)
    self->srv_->forget(self);
}

// -- input --------------------------------------------------------------------

void connection::on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf) {
  // An upload's body comes in reads of up to a chunk: a sixteenth of the
  // callbacks, parser calls and hand-offs to its worker.
  auto* self = static_cast<connection*>(h->data);
  if (self->lend_upload_buffer(buf))
    return;
  if (self->bulk_)
    suggested = std::max(suggested, size_t{1} << 20);
  buf->base = new char[suggested];
  buf->len = suggested;
}

void connection::on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  auto* self = static_cast<connection*>(s->data);
  // A chunk lent to an upload stays the transfer's.
  bool lent = self->is_lent(buf);
  std::unique_ptr<char[]> owned{lent ? nullptr : buf->base};
  if (n < 0) {
    if (n == UV_EOF && self->tunnel_ != tunnel_phase::none)
      self->client_ended();
    else
      self->close();
    return;
  }
  if (n == 0 || self->closing_)
    return;
  self->last_activity_ = clock_type::now();
  if (self->lingering_) {
    // Discard what the client still sends after our final response.
    self->lingered_ += static_cast<size_t>(n);
    if (self->lingered_ > linger_limit)
      self->close();
    return;
  }
  if (self->tunnel_ == tunnel_phase::open) {
    self->from_client(std::string_view{buf->base, static_cast<size_t>(n)});
    self->update_reading();
    self->arm_deadline();
    return;
  }
  if (lent)
    self->received(static_cast<size_t>(n));
  else
    self->input_.append(buf->base, static_cast<size_t>(n));
  if (self->bulk_)
    self->feed_upload();
  else
    self->process();
  self->update_reading();
  self->arm_deadline();
}

void connection::reset_parser() {
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(srv_->options().max_header));
  // Checked against the head in check_header: a bulk transfer's body may
  // be larger than max_body.
  parser_->body_limit(boost::none);
  header_checked_ = false;
}

// Reads only while the input can be used: a connection busy with a request
// (or a stream) keeps at most `pause_input` bytes of what the peer sends
// next; the kernel's socket buffers and then the peer hold the rest.
void connection::update_reading() {
  if (closing_)
    return;
  bool busy = waiting_ || writing_ || behind_;
  bool want = lingering_ || !busy || pending_input() < pause_input;
  if (bulk_ && !lingering_)
    want = transfer_wants_input();
  if (tunnel_ == tunnel_phase::open)
    want = !client_ended_ && tunnel_left_ != 0 &&
           uv_stream_get_write_queue_size(
               reinterpret_cast<const uv_stream_t*>(&up_)) <= max_stream_queue;
  if (want == reading_)
    return;
  if (!want) {
    uv_read_stop(stream());
    reading_ = false;
    return;
  }
  if (uv_read_start(stream(), on_alloc, on_read) != 0) {
    close();
    return;
  }
  reading_ = true;
}

// Parses as much buffered input as possible; at most one request is
// outstanding at a time, later pipelined requests wait in input_.
void connection::process() {
  while (!closing_ && !lingering_ && !waiting_ && !writing_ && !behind_ &&
         !bulk_ && tunnel_ == tunnel_phase::none && pending_input() > 0) {
    if (request_started_ == never)
      request_started_ = clock_type::now();
    beast::error_code ec;
    auto used = parser_->put(
        boost::asio::buffer(input_.data() + consumed_, pending_input()), ec);
    consumed_ += used;
    if (ec == bhttp::error::need_more) {
      if (used == 0)
        break;
      continue;
    }
    if (ec == bhttp::error::body_limit) {
      const auto* r = std::exchange(route_, nullptr);
      refuse_size(r, std::nullopt, limit_of(r));
      return;
    }
    if (ec == bhttp::error::header_limit) {
      reject(431, "request header too large", "invalid_argument");
      return;
    }
    if (ec) {
      reject(400, "malformed HTTP request", "invalid_argument");
      return;
    }
    if (parser_->is_header_done() && !header_checked_) {
      header_checked_ = true;
      head_done_ = clock_type::now();
      if (!check_header())
        return;
    }
    if (parser_->is_done())
      handle_request();
    else if (used == 0)
      break;
  }
  compact_input();
}

void connection::compact_input() {
  if (consumed_ == input_.size()) {
    input_.clear();
    consumed_ = 0;
  } else if (consumed_ >= pause_input) {
    input_.erase(0, consumed_);
    consumed_ = 0;
  }
}

// Decides before the body is read; a rejected request closes the
// connection, so an unread body can never be taken for the next request.
bool connection::check_header() {
  const auto& req = parser_->get();
  keep_alive_ = req.keep_alive();
  // The metrics address serves GET /metrics (its route, without the
  // token) and /health, nothing else.
  if (metrics_only_) {
    bool get = req.method() == bhttp::verb::get;
    const auto* r = get && req.target() == "/metrics"
                        ? srv_->find_route(bhttp::verb::get, "/metrics")
                        : nullptr;
    if (r == nullptr && !(get && req.target() == "/health")) {
      reject(404, "not found", "not_found");
      return false;
    }
    if (!body_fits(r))
      return false;
    route_ = r;
    return true;
  }
  // A Host a front claims is a sandbox's port, whatever the target; the
  // front checks its own credentials.
  if (const auto* r = srv_->host_route(req[bhttp::field::host])) {
    plan_tunnel(*r);
    return false;
  }
  // A front's route: it serves the whole request, under its access rule,
  // which is checked first (a caller without the token learns no limit).
  route_ = srv_->find_route(
      req.method(), std::string_view{req.target().data(), req.target().size()});
  if (route_ != nullptr && route_->access == route_access::token &&
      !authorized(req)) {
    route_ = nullptr;
    return false;
  }
  if (route_ != nullptr && route_->streamed) {
    // Served on its head; the body, if any, streams to the transfer.
    plan_transfer(*std::exchange(route_, nullptr));
    return false;
  }
  if (route_ != nullptr)
    return body_fits(route_);
  // The transport's own paths hold a body in memory too, within max_body.
  if (!body_fits(nullptr))
    return false;
  // Health stays open (probes carry no token).
  if (req.method() == bhttp::verb::get)
    return true;
  reject(404, "not found", "not_found");
  return false;
}

bool connection::body_fits(const route* r) {
  // Beast checks a declared length against its limit only while it
  // parses the head, before this: it is checked here; a chunked body is
  // checked as it comes, against the limit set here.
  auto limit = limit_of(r);
  auto declared = parser_->content_length();
  if ((declared && *declared > limit) ||
      (r != nullptr && r->length_required && declared.value_or(0) == 0)) {
    route_ = nullptr;
    refuse_size(r, declared ? std::optional<uint64_t>{*declared} : std::nullopt,
                limit);
    return false;
  }
  parser_->body_limit(limit);
  return true;
}

size_t connection::limit_of(const route* r) const {
  return r != nullptr && r->max_body > 0 ? r->max_body
                                         : srv_->options().max_body;
}

void connection::refuse_size(const route* r, std::optional<uint64_t> declared,
                             size_t limit) {
  if (r != nullptr && r->too_large) {
    auto answer = r->too_large();
    srv_->count_rejected(answer.status);
    respond(answer.status, std::move(answer.body), true, answer.content_type,
            &answer.headers);
    return;
  }
  // The transport's own paths keep the prototype's answer.
  if (r == nullptr) {
    reject(400, "invalid request size", "payload_too_large");
    return;
  }
  reject(413,
         (declared ? "the body declares " + std::to_string(*declared) +
                         " bytes; this route takes at most "
                   : std::string{"the body passes this route's limit of "}) +
             std::to_string(limit),
         "payload_too_large");
}

template <class Request>
bool connection::authorized(const Request& req) {
  const auto& token = srv_->options().token;
  if (token.empty())
    return true;
  auto it = req.find(bhttp::field::authorization);
  if (it != req.end() && token_matches(it->value(), token))
    return true;
  reject(401, "unauthorized", "unauthorized");
  return false;
}

void connection::handle_request() {
  auto req = parser_->release();
  reset_parser();
  request_started_ = head_done_ = never;
  if (const auto* r = std::exchange(route_, nullptr)) {
    waiting_ = true;
    srv_->serve_route(this, *r, std::move(req));
    return;
  }
  if (req.target() == "/health")
    respond(200, R"({"status":"healthy"})", !keep_alive_);
  else
    respond(404, error_body("not found", "not_found"), !keep_alive_);
}

// -- output -------------------------------------------------------------------

void connection::reject(int status, std::string_view message,
                        std::string_view code) {
  srv_->count_rejected(status);
  respond(status, error_body(message, code), true);
}

void connection::respond(
    int status, std::string body, bool close_after,
    std::string_view content_type,
    const std::vector<std::pair<std::string, std::string>>* headers) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status),
                                          11};
  res.set(bhttp::field::content_type,
          beast::string_view{content_type.data(), content_type.size()});
  res.set(bhttp::field::server, "allox-workspace-daemon");
  if (headers != nullptr)
    for (const auto& [name, value] : *headers)
      res.insert(name, value);
  res.keep_alive(!close_after);
  res.body() = std::move(body);
  res.prepare_payload();
  // Header and body leave in one write: with TCP_NODELAY the client never
  // waits for a delayed ACK between them.
  auto* w = new write_req{};
  w->conn = this;
  w->close_after = close_after;
  w->data = serialize(res, false);
  uv_buf_t buf =
      uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
  w->req.data = w;
  writing_ = true;
  write_progress_ = clock_type::now();
  if (uv_write(&w->req, stream(), &buf, 1, on_written) != 0) {
    delete w;
    writing_ = false;
    close();
    return;
  }
  arm_deadline();
}

/// Writes raw bytes of a streamed response; `last` closes afterwards.
void connection::send(std::string data, bool last) {
  auto* w = new write_req{};
  w->conn = this;
  w->close_after = last;
  w->stream = true;
  w->data = std::move(data);
  uv_buf_t buf =
      uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
  w->req.data = w;
  if (stream_writes_ == 0)
    write_progress_ = clock_type::now();
  if (uv_write(&w->req, stream(), &buf, 1, on_written) != 0) {
    delete w;
    close();
    return;
  }
  ++stream_writes_;
}

void connection::on_written(uv_write_t* req, int status) {
  std::unique_ptr<write_req> w{static_cast<write_req*>(req->data)};
  auto* self = w->conn;
  if (self->closing_)
    return;
  self->last_activity_ = self->write_progress_ = clock_type::now();
  if (w->stream) {
    --self->stream_writes_;
    if (status != 0 || w->close_after) {
      self->close();
      return;
    }
    if (self->tunnel_ == tunnel_phase::open) {
      self->tunnel_wrote();
      return;
    }
    if (self->bulk_) {
      self->on_transfer_wake();
      return;
    }
    // The client caught up: a live answer's front sends what it held
    // back.
    if (self->drain_wanted_ &&
        uv_stream_get_write_queue_size(self->stream()) <= max_stream_queue) {
      self->drain_wanted_ = false;
      if (auto hooks = self->live_; hooks && hooks->drained)
        hooks->drained();
    }
    if (!self->closing_)
      self->arm_deadline();
    return;
  }
  self->writing_ = false;
  if (status != 0) {
    self->close();
    return;
  }
  if (w->close_after) {
    if (self->refused_)
      self->close(); // it never sent a body worth draining
    else
      self->linger();
    return;
  }
  // Only a pipelined request can be answered before the peer read the
  // last answer.
  if (self->pending_input() > 0)
    self->peer_behind();
  self->process();
  self->update_reading();
  self->arm_deadline();
}

void connection::linger() {
  lingering_ = true;
  input_.clear();
  consumed_ = 0;
  uv_timer_stop(&deadline_);
  update_reading();
  auto* req = new uv_shutdown_t{};
  req->data = this;
  if (uv_shutdown(req, stream(), [](uv_shutdown_t* r, int) { delete r; }) !=
      0) {
    delete req;
    close();
    return;
  }
  uv_timer_start(&timer_, on_linger_timeout, linger_ms, 0);
}

void connection::on_linger_timeout(uv_timer_t* t) {
  static_cast<connection*>(t->data)->close();
}

} // namespace allox::http
