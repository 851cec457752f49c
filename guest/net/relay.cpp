// The egress broker's byte relay and connection lifecycle: writes that
// own their buffers, reads paused while the other side is behind,
// half-closes passed on, and one audit record per attempt at the end.
#include "guest/net/proxy_connection.hpp"

#include <cstring>

namespace allox::net::proxy {

static void on_alloc(uv_handle_t*, size_t, uv_buf_t* buf);
static void on_relay_read(uv_stream_t* from, ssize_t n, const uv_buf_t* buf);

void maybe_free_site(site* s) {
  if (s->closing && !s->listener_open && s->conns.empty())
    delete s;
}

void maybe_free(conn* c) {
  if (c->handles > 0 || c->resolving)
    return;
  auto* s = c->owner;
  s->conns.erase(c);
  delete c;
  maybe_free_site(s);
}

void on_handle_closed(uv_handle_t* h) {
  auto* c = static_cast<conn*>(h->data);
  --c->handles;
  std::free(h);
  maybe_free(c);
}

void close_handle(uv_handle_t* h) {
  if (h != nullptr && !uv_is_closing(h))
    uv_close(h, on_handle_closed);
}

/// The attempt's one audit record, with what it relayed.
static void audit(conn* c) {
  if (c->audited || c->ev.host.empty())
    return;
  c->audited = true;
  c->ev.duration_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - c->started)
          .count());
  if (c->owner->events)
    c->owner->events(c->ev);
}

/// Closes every handle of the connection; it is freed once they are.
void finish(conn* c) {
  if (c->closing)
    return;
  c->closing = true;
  audit(c);
  auto& counters = *c->owner->counters;
  counters.open.fetch_sub(1);
  c->owner->all_open->fetch_sub(1);
  if (c->resolving)
    uv_cancel(reinterpret_cast<uv_req_t*>(&c->resolver));
  close_handle(reinterpret_cast<uv_handle_t*>(c->timer));
  close_handle(reinterpret_cast<uv_handle_t*>(c->client));
  close_handle(reinterpret_cast<uv_handle_t*>(c->upstream));
}

static void on_written(uv_write_t* req, int status) {
  auto* op = reinterpret_cast<write_op*>(req);
  auto* c = op->c;
  std::free(op->data);
  bool close_after = op->close_after;
  auto* dst = req->handle;
  delete op;
  if (c->closing)
    return;
  if (status < 0 || close_after) {
    finish(c);
    return;
  }
  // The side that fills this one may read again.
  auto* src = reinterpret_cast<uv_stream_t*>(
      dst == reinterpret_cast<uv_stream_t*>(c->client) ? c->upstream
                                                       : c->client);
  bool& paused = src == reinterpret_cast<uv_stream_t*>(c->client)
                     ? c->client_paused
                     : c->upstream_paused;
  if (paused && uv_stream_get_write_queue_size(dst) < resume_below) {
    paused = false;
    uv_read_start(src, on_alloc, on_relay_read);
  }
}

/// Writes `data` (malloc'd, taken over) to `dst`.
void send(conn* c, uv_stream_t* dst, char* data, size_t len, bool close_after) {
  auto* op = new write_op;
  op->c = c;
  op->data = data;
  op->close_after = close_after;
  auto buf = uv_buf_init(data, static_cast<unsigned>(len));
  if (uv_write(&op->req, dst, &buf, 1, on_written) != 0) {
    std::free(data);
    delete op;
    finish(c);
  }
}

void send_copy(conn* c, uv_stream_t* dst, const std::string& text,
               bool close_after) {
  if (text.empty()) {
    if (close_after)
      finish(c);
    return;
  }
  auto* data = static_cast<char*>(std::malloc(text.size()));
  std::memcpy(data, text.data(), text.size());
  send(c, dst, data, text.size(), close_after);
}

/// Answers the client with an error status and closes.
void refuse(conn* c, int status, const std::string& reason) {
  const char* phrase = status == 403   ? "Forbidden"
                       : status == 431 ? "Request Header Fields Too Large"
                       : status == 400 ? "Bad Request"
                       : status == 504 ? "Gateway Timeout"
                                       : "Bad Gateway";
  auto body = reason + "\n";
  send_copy(c, reinterpret_cast<uv_stream_t*>(c->client),
            "HTTP/1.1 " + std::to_string(status) + " " + phrase +
                "\r\nContent-Type: text/plain\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
                body,
            true);
}

static void on_alloc(uv_handle_t*, size_t, uv_buf_t* buf) {
  buf->base = static_cast<char*>(std::malloc(read_size));
  buf->len = buf->base != nullptr ? read_size : 0;
}

static void on_shutdown(uv_shutdown_t* req, int) {
  auto* c = static_cast<conn*>(req->data);
  delete req;
  --c->shutdowns;
  if (!c->closing && c->client_eof && c->upstream_eof && c->shutdowns == 0)
    finish(c);
}

static void on_relay_read(uv_stream_t* from, ssize_t n, const uv_buf_t* buf) {
  auto* c = static_cast<conn*>(from->data);
  bool from_client = from == reinterpret_cast<uv_stream_t*>(c->client);
  auto* to =
      reinterpret_cast<uv_stream_t*>(from_client ? c->upstream : c->client);
  if (n <= 0)
    std::free(buf->base);
  if (c->closing)
    return;
  if (n > 0) {
    auto& counters = *c->owner->counters;
    if (from_client) {
      c->ev.bytes_sent += static_cast<uint64_t>(n);
      counters.bytes_sent.fetch_add(static_cast<uint64_t>(n));
    } else {
      c->ev.bytes_received += static_cast<uint64_t>(n);
      counters.bytes_received.fetch_add(static_cast<uint64_t>(n));
    }
    send(c, to, buf->base, static_cast<size_t>(n));
    if (!c->closing && uv_stream_get_write_queue_size(to) > pause_above) {
      uv_read_stop(from);
      (from_client ? c->client_paused : c->upstream_paused) = true;
    }
    return;
  }
  if (n == 0)
    return;
  if (n != UV_EOF) {
    finish(c);
    return;
  }
  // Half-close: the other side learns of the end once what came before
  // it is written.
  uv_read_stop(from);
  (from_client ? c->client_eof : c->upstream_eof) = true;
  auto* req = new uv_shutdown_t;
  req->data = c;
  ++c->shutdowns;
  if (uv_shutdown(req, to, on_shutdown) != 0) {
    delete req;
    --c->shutdowns;
    finish(c);
  }
}

void start_relay(conn* c) {
  c->relaying = true;
  uv_timer_stop(c->timer);
  auto* client = reinterpret_cast<uv_stream_t*>(c->client);
  auto* upstream = reinterpret_cast<uv_stream_t*>(c->upstream);
  uv_tcp_nodelay(c->upstream, 1);
  std::string payload = c->in.substr(c->req.consumed);
  c->in.clear();
  if (c->req.tunnel) {
    send_copy(c, client, "HTTP/1.1 200 Connection Established\r\n\r\n");
    c->ev.bytes_sent += payload.size();
    send_copy(c, upstream, payload);
  } else {
    c->ev.bytes_sent += payload.size();
    send_copy(c, upstream, c->req.head + payload);
  }
  if (c->closing)
    return;
  uv_read_start(client, on_alloc, on_relay_read);
  uv_read_start(upstream, on_alloc, on_relay_read);
}

} // namespace allox::net::proxy
