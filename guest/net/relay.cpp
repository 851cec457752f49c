// SPDX-License-Identifier: Apache-2.0
// The egress broker's byte relay and connection lifecycle: the proxy's own
// error answers, the relay spliced through a pipe per direction with
// half-closes passed on, and one audit record per attempt at the end.
#include "guest/net/proxy_connection.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace allox::net::proxy {

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
  c->ev.timestamp_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
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
  if (c->resolving)
    uv_cancel(reinterpret_cast<uv_req_t*>(&c->resolver));
  // A poll handle stops watching as it closes: the duplicates and the
  // pipes can go right after.
  close_handle(reinterpret_cast<uv_handle_t*>(c->client_poll));
  close_handle(reinterpret_cast<uv_handle_t*>(c->upstream_poll));
  c->client_fd.reset();
  c->upstream_fd.reset();
  c->up = {};
  c->down = {};
  close_handle(reinterpret_cast<uv_handle_t*>(c->timer));
  close_handle(reinterpret_cast<uv_handle_t*>(c->client));
  close_handle(reinterpret_cast<uv_handle_t*>(c->upstream));
}

/// The proxy's own answer on its way to the client; the connection ends
/// once it is written (or cannot be).
struct answer_op {
  uv_write_t req{};
  conn* c = nullptr;
  std::string text;
};

static void on_answered(uv_write_t* req, int) {
  auto* op = reinterpret_cast<answer_op*>(req);
  auto* c = op->c;
  delete op;
  finish(c);
}

/// Answers the client with an error status and closes.
void refuse(conn* c, int status, const std::string& reason) {
  const char* phrase = status == 403   ? "Forbidden"
                       : status == 431 ? "Request Header Fields Too Large"
                       : status == 400 ? "Bad Request"
                       : status == 504 ? "Gateway Timeout"
                                       : "Bad Gateway";
  auto body = reason + "\n";
  auto* op = new answer_op;
  op->c = c;
  op->text = "HTTP/1.1 " + std::to_string(status) + " " + phrase +
             "\r\nContent-Type: text/plain\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
             body;
  auto buf =
      uv_buf_init(op->text.data(), static_cast<unsigned>(op->text.size()));
  if (uv_write(&op->req, reinterpret_cast<uv_stream_t*>(c->client), &buf, 1,
               on_answered) != 0) {
    delete op;
    finish(c);
  }
}

namespace {

/// Moves what `src` has into the direction's pipe, and what the pipe holds
/// into `dst`, without copying through user space; at the source's end,
/// once the pipe is empty, passes the half-close on. False on an error of
/// either socket.
bool pump(int src, int dst, direction& d, uint64_t& moved,
          std::atomic<uint64_t>& total) {
  while (!d.src_eof && d.queued < d.capacity) {
    auto n = ::splice(src, nullptr, d.w.get(), nullptr, d.capacity - d.queued,
                      SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n > 0) {
      d.queued += static_cast<size_t>(n);
      moved += static_cast<uint64_t>(n);
      total.fetch_add(static_cast<uint64_t>(n));
    } else if (n == 0) {
      d.src_eof = true;
    } else if (errno == EAGAIN) {
      break;
    } else if (errno != EINTR) {
      return false;
    }
  }
  while (d.queued > 0) {
    auto n = ::splice(d.r.get(), nullptr, dst, nullptr, d.queued,
                      SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n > 0)
      d.queued -= static_cast<size_t>(n);
    else if (n < 0 && errno == EAGAIN)
      break;
    else if (n == 0 || errno != EINTR)
      return false;
  }
  if (d.src_eof && d.queued == 0 && !d.shut) {
    ::shutdown(dst, SHUT_WR);
    d.shut = true;
  }
  return true;
}

/// Readable while its pipe has room, writable while the other pipe holds
/// bytes for it.
int interest(const direction& out_of, const direction& into) {
  int events = 0;
  if (!out_of.src_eof && out_of.queued < out_of.capacity)
    events |= UV_READABLE;
  if (into.queued > 0)
    events |= UV_WRITABLE;
  return events;
}

void on_ready(uv_poll_t* h, int status, int) {
  auto* c = static_cast<conn*>(h->data);
  if (c->closing)
    return;
  auto& counters = *c->owner->counters;
  if (status < 0 ||
      !pump(c->client_fd.get(), c->upstream_fd.get(), c->up, c->ev.bytes_sent,
            counters.bytes_sent) ||
      !pump(c->upstream_fd.get(), c->client_fd.get(), c->down,
            c->ev.bytes_received, counters.bytes_received)) {
    finish(c);
    return;
  }
  if (c->up.shut && c->down.shut) {
    finish(c);
    return;
  }
  for (auto [poll, events] :
       {std::pair{c->client_poll, interest(c->up, c->down)},
        std::pair{c->upstream_poll, interest(c->down, c->up)}}) {
    if (events == 0)
      uv_poll_stop(poll);
    else
      uv_poll_start(poll, events, on_ready);
  }
}

/// A direction's pipe, as large as the system allows up to 1 MiB, with
/// `first` (the tunnel's 200, a forwarded request's header) already in it.
bool open_direction(direction& d, const std::string& first) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
    return false;
  d.r.reset(fds[0]);
  d.w.reset(fds[1]);
  int size = ::fcntl(d.w.get(), F_SETPIPE_SZ, 1 << 20);
  d.capacity =
      static_cast<size_t>(size > 0 ? size : ::fcntl(d.w.get(), F_GETPIPE_SZ));
  if (first.empty())
    return true;
  auto n = ::write(d.w.get(), first.data(), first.size());
  if (n != static_cast<ssize_t>(first.size()))
    return false;
  d.queued = first.size();
  return true;
}

} // namespace

// The relay runs on the sockets' own descriptors (duplicated, so the idle
// libuv handles keep theirs until they close) through two pipes, one per
// direction, with splice: the bytes of a 1 GiB download never enter the
// daemon's memory, and each direction holds at most one pipe's worth.
void start_relay(conn* c) {
  c->relaying = true;
  uv_timer_stop(c->timer);
  uv_tcp_nodelay(c->upstream, 1);
  std::string payload = c->in.substr(c->req.consumed);
  c->in.clear();
  // What came with the request header is the sandbox's too.
  c->ev.bytes_sent += payload.size();
  c->owner->counters->bytes_sent.fetch_add(payload.size());
  std::string to_client;
  std::string to_upstream = payload;
  if (c->req.tunnel)
    to_client = "HTTP/1.1 200 Connection Established\r\n\r\n";
  else
    to_upstream = c->req.head + payload;
  uv_os_fd_t client = -1, upstream = -1;
  uv_fileno(reinterpret_cast<uv_handle_t*>(c->client), &client);
  uv_fileno(reinterpret_cast<uv_handle_t*>(c->upstream), &upstream);
  c->client_fd.reset(::fcntl(client, F_DUPFD_CLOEXEC, 0));
  c->upstream_fd.reset(::fcntl(upstream, F_DUPFD_CLOEXEC, 0));
  if (!c->client_fd || !c->upstream_fd || !open_direction(c->up, to_upstream) ||
      !open_direction(c->down, to_client)) {
    c->ev.error = std::string{"relay: "} + std::strerror(errno);
    finish(c);
    return;
  }
  auto* loop = c->client->loop;
  c->client_poll = new_handle<uv_poll_t>(c);
  c->upstream_poll = new_handle<uv_poll_t>(c);
  uv_poll_init_socket(loop, c->client_poll, c->client_fd.get());
  uv_poll_init_socket(loop, c->upstream_poll, c->upstream_fd.get());
  on_ready(c->client_poll, 0, 0);
}

} // namespace allox::net::proxy
