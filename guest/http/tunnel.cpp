// SPDX-License-Identifier: Apache-2.0
// A connection that became a tunnel to a port inside a sandbox: a request
// whose Host a front claims (server::set_host_route, e.g. E2B's
// `<port>-<sandbox>.<domain>`) is handed to the front on its head alone;
// the front answers it (a refusal) or hands back a socket connected to the
// port (responder::tunnel), and then the request goes there: its head
// without the credentials meant for the daemon, then its body.
//
// One request per tunnel: a plain request goes with `Connection: close`
// and exactly its Content-Length of body (a chunked one is refused, 411),
// and the connection closes after the port's answer, so a client's later
// request (perhaps for the daemon, with its token) never reaches the
// sandbox. An upgrade (a WebSocket) passes every byte after its head, both
// ways, as the protocol it switched to.
//
//   client bytes -> upstream write queue; reading the client stops while
//                   more than max_stream_queue bytes wait there
//   upstream bytes -> client (send); reading the upstream stops while the
//                   client's queue is as long
//   client EOF -> upstream's write side shut (an upgrade); upstream EOF or
//                   any error -> the connection closes once its queued
//                   bytes are out
#include "guest/http/connection.hpp"

#include "guest/http/server.hpp"
#include "guest/http/wire.hpp"

#include <boost/beast/http/empty_body.hpp>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>

namespace allox::http {

namespace bhttp = boost::beast::http;

namespace {

/// Credentials meant for the daemon, never passed to the sandbox.
constexpr const char* daemon_credentials[] = {"X-API-Key",
                                              "E2b-Traffic-Access-Token"};

struct up_write {
  uv_write_t req{};
  connection* conn = nullptr;
  std::string data;
};

uv_stream_t* as_stream(uv_tcp_t* t) {
  return reinterpret_cast<uv_stream_t*>(t);
}

} // namespace

void connection::plan_tunnel(const route& r) {
  const auto& req = parser_->get();
  bool upgrade = parser_->upgrade();
  if (!upgrade && parser_->chunked()) {
    reject(411, "a request to a sandbox's port needs a Content-Length",
           "invalid_argument");
    return;
  }
  bhttp::request<bhttp::empty_body> head{req.base()};
  for (const char* name : daemon_credentials)
    head.erase(name);
  if (auto auth = head.find(bhttp::field::authorization);
      auth != head.end() && token_matches(auth->value(), srv_->options().token))
    head.erase(auth);
  if (!upgrade)
    head.set(bhttp::field::connection, "close");
  tunnel_left_ = upgrade ? std::numeric_limits<uint64_t>::max()
                         : parser_->content_length().value_or(0);
  tunnel_head_ = serialize(head, true);
  tunnel_ = tunnel_phase::planning;
  waiting_ = true;
  srv_->serve_route(this, r, route_request{req.base()});
}

void connection::start_tunnel(os::unique_fd upstream) {
  if (closing_ || tunnel_ != tunnel_phase::planning)
    return;
  waiting_ = false;
  uv_tcp_init(tcp_.loop, &up_);
  up_.data = this;
  up_open_ = true;
  if (uv_tcp_open(&up_, upstream.get()) != 0) {
    close();
    return;
  }
  upstream.release();
  uv_tcp_nodelay(&up_, 1);
  tunnel_ = tunnel_phase::open;
  // The request's head, then what came of its body (or stream).
  to_upstream(std::move(tunnel_head_));
  from_client(std::string_view{input_}.substr(consumed_));
  input_.clear();
  consumed_ = 0;
  update_upstream_reading();
  update_reading();
  arm_deadline();
}

void connection::from_client(std::string_view data) {
  // Past the request's body: nothing more goes, nor is read.
  auto n = static_cast<size_t>(std::min<uint64_t>(data.size(), tunnel_left_));
  if (tunnel_left_ != std::numeric_limits<uint64_t>::max())
    tunnel_left_ -= n;
  to_upstream(std::string{data.substr(0, n)});
}

void connection::to_upstream(std::string data) {
  if (data.empty())
    return;
  auto* w = new up_write{};
  w->conn = this;
  w->data = std::move(data);
  w->req.data = w;
  auto buf = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
  if (uv_write(&w->req, as_stream(&up_), &buf, 1, on_up_written) != 0) {
    delete w;
    close();
  }
}

void connection::on_up_written(uv_write_t* req, int status) {
  std::unique_ptr<up_write> w{static_cast<up_write*>(req->data)};
  auto* self = w->conn;
  if (self->closing_)
    return;
  if (status != 0) {
    self->close();
    return;
  }
  self->last_activity_ = clock_type::now();
  self->update_reading();
  self->arm_deadline();
}

void connection::update_upstream_reading() {
  if (closing_ || tunnel_ != tunnel_phase::open || up_ended_)
    return;
  bool want = uv_stream_get_write_queue_size(stream()) <= max_stream_queue;
  if (want == up_reading_)
    return;
  if (!want) {
    uv_read_stop(as_stream(&up_));
    up_reading_ = false;
    return;
  }
  auto alloc = [](uv_handle_t*, size_t, uv_buf_t* buf) {
    buf->base = new char[64 << 10];
    buf->len = 64 << 10;
  };
  if (uv_read_start(as_stream(&up_), alloc, on_up_read) != 0) {
    close();
    return;
  }
  up_reading_ = true;
}

void connection::on_up_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  std::unique_ptr<char[]> owned{buf->base};
  auto* self = static_cast<connection*>(s->data);
  if (self->closing_ || n == 0)
    return;
  if (n < 0) {
    // The port closed (or failed): the client gets what was sent, then
    // the connection closes.
    self->up_ended_ = true;
    self->up_reading_ = false;
    uv_read_stop(s);
    if (self->stream_writes_ == 0)
      self->close();
    return;
  }
  self->last_activity_ = clock_type::now();
  self->send(std::string{buf->base, static_cast<size_t>(n)}, false);
  self->update_upstream_reading();
  self->arm_deadline();
}

void connection::tunnel_wrote() {
  if (up_ended_ && stream_writes_ == 0) {
    close();
    return;
  }
  update_upstream_reading();
  arm_deadline();
}

void connection::client_ended() {
  client_ended_ = true;
  if (reading_)
    uv_read_stop(stream());
  reading_ = false;
  if (tunnel_ != tunnel_phase::open)
    return; // planning: the request is whole; the port may still answer
  if (up_ended_) {
    if (stream_writes_ == 0)
      close(); // else the last write to the client closes
    return;
  }
  if (tunnel_left_ != std::numeric_limits<uint64_t>::max())
    return; // a plain request: the port answers, then closes
  // The port sees the end of the request stream and may still answer.
  auto* req = new uv_shutdown_t{};
  if (uv_shutdown(req, as_stream(&up_),
                  [](uv_shutdown_t* r, int) { delete r; }) != 0)
    delete req;
}

} // namespace allox::http
