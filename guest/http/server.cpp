#include "guest/http/server.hpp"

#include "guest/log.hpp"

#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <optional>

namespace allox::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

// -- helpers
// --------------------------------------------------------------------

expected<std::pair<std::string, uint16_t>> parse_listen(const std::string& s) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size())
    return make_error(errc::invalid_argument,
                      "listen address must be HOST:PORT: " + s);
  auto host = s.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  unsigned long port = 0;
  try {
    size_t idx = 0;
    port = std::stoul(s.substr(colon + 1), &idx);
    if (idx != s.size() - colon - 1 || port > 65535)
      throw std::out_of_range("port");
  } catch (...) {
    return make_error(errc::invalid_argument, "invalid port in: " + s);
  }
  return std::make_pair(host, static_cast<uint16_t>(port));
}

bool is_loopback_host(const std::string& host) {
  return host == "127.0.0.1" || host == "::1" || host == "localhost";
}

bool token_matches(std::string_view header, std::string_view token) {
  constexpr std::string_view prefix = "Bearer ";
  if (header.size() != prefix.size() + token.size())
    return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < prefix.size(); ++i)
    diff |= static_cast<unsigned char>(header[i] ^ prefix[i]);
  for (size_t i = 0; i < token.size(); ++i)
    diff |= static_cast<unsigned char>(header[prefix.size() + i] ^ token[i]);
  return diff == 0;
}

// -- connection
// -----------------------------------------------------------------

class connection {
public:
  connection(server* srv, uv_loop_t* loop) : srv_(srv) {
    uv_tcp_init(loop, &tcp_);
    tcp_.data = this;
    uv_timer_init(loop, &timer_);
    timer_.data = this;
    reset_parser();
  }

  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(&tcp_); }

  void start() {
    uv_tcp_nodelay(&tcp_, 1);
    arm_timer();
    uv_read_start(stream(), on_alloc, on_read);
  }

  /// A reply for the request this connection is waiting on.
  void answer(int status, std::string body) {
    waiting_ = false;
    if (streaming_) {
      on_stream_reply(status, body);
      return;
    }
    respond(status, std::move(body), !keep_alive_);
  }

  /// Reject the connection outright (too many connections).
  void refuse() {
    refused_ = true;
    respond(503, R"({"error":"too many connections"})", true);
  }

  /// Still counted against the connection limit.
  bool active() const { return !lingering_ && !closing_; }

  void close() {
    if (closing_)
      return;
    closing_ = true;
    uv_read_stop(stream());
    uv_timer_stop(&timer_);
    pending_closes_ = 2;
    uv_close(reinterpret_cast<uv_handle_t*>(&timer_), on_closed);
    uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), on_closed);
  }

private:
  struct write_req {
    uv_write_t req;
    std::string data;
    connection* conn;
    bool close_after;
    bool stream = false;
  };

  void reset_parser() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(srv_->options().max_header));
    parser_->body_limit(srv_->options().max_body);
    header_checked_ = false;
  }

  void arm_timer() {
    uv_timer_start(&timer_, on_timeout,
                   static_cast<uint64_t>(srv_->options().idle_timeout.count()),
                   0);
  }

  static void on_alloc(uv_handle_t*, size_t suggested, uv_buf_t* buf) {
    buf->base = new char[suggested];
    buf->len = suggested;
  }

  static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
    auto* self = static_cast<connection*>(s->data);
    if (self->lingering_) {
      // Discard what the client still sends after our final response.
      delete[] buf->base;
      self->lingered_ += n > 0 ? static_cast<size_t>(n) : 0;
      if (n < 0 || self->lingered_ > linger_limit)
        self->close();
      return;
    }
    if (n > 0 && !self->closing_) {
      self->input_.append(buf->base, static_cast<size_t>(n));
      self->arm_timer();
      self->process();
    }
    delete[] buf->base;
    if (n < 0)
      self->close();
  }

  static void on_timeout(uv_timer_t* t) {
    auto* self = static_cast<connection*>(t->data);
    if (self->lingering_) {
      self->close();
      return;
    }
    if (self->streaming_) {
      if (!self->waiting_)
        self->poll_stream();
      return;
    }
    if (self->waiting_ || self->writing_) {
      self->arm_timer(); // never cut off a request the daemon is serving
      return;
    }
    self->close();
  }

  static void on_closed(uv_handle_t* h) {
    auto* self = static_cast<connection*>(h->data);
    if (--self->pending_closes_ == 0)
      self->srv_->forget(self);
  }

  // Parses as much buffered input as possible; at most one request is
  // outstanding at a time, later pipelined requests wait in input_.
  void process() {
    while (!closing_ && !waiting_ && !writing_ && !input_.empty()) {
      beast::error_code ec;
      auto used = parser_->put(boost::asio::buffer(input_), ec);
      input_.erase(0, used);
      if (ec == bhttp::error::need_more) {
        if (used == 0)
          break;
        continue;
      }
      if (ec == bhttp::error::body_limit) {
        reject(400, "invalid request size", "payload_too_large");
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
        if (!check_header())
          return;
      }
      if (parser_->is_done())
        handle_request();
      else if (used == 0)
        break;
    }
  }

  // Decides before the body is read; a rejected request closes the
  // connection, so an unread body can never be taken for the next request.
  bool check_header() {
    const auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    if (req.method() == bhttp::verb::get && !is_stream(req.target()))
      return true;
    if (req.method() == bhttp::verb::get)
      return authorized(req);
    if (req.method() != bhttp::verb::post || req.target() != "/v1/rpc") {
      reject(404, {}, "not_found");
      return false;
    }
    if (!authorized(req))
      return false;
    auto length = parser_->content_length();
    if (!length || *length == 0 || *length > srv_->options().max_body) {
      reject(400, "invalid request size", "payload_too_large");
      return false;
    }
    return true;
  }

  template <class Request>
  bool authorized(const Request& req) {
    const auto& token = srv_->options().token;
    if (token.empty())
      return true;
    auto it = req.find(bhttp::field::authorization);
    if (it != req.end() && token_matches(it->value(), token))
      return true;
    reject(401, "unauthorized", "unauthorized");
    return false;
  }

  static bool is_stream(beast::string_view target) {
    auto url = boost::urls::parse_origin_form(
        std::string_view{target.data(), target.size()});
    return url && url->path() == "/v1/stream";
  }

  // -- the live stream of a run: GET /v1/stream?agent_id=&session_id=&run_id=
  //
  // Server-Sent Events fed by process.output requests through the normal
  // dispatch path (same routing, same session actor): `stdout` and `stderr`
  // events carry {offset, data}, `state` events the run's state, and `end`
  // the final state, after which the connection closes.

  void start_stream(beast::string_view target) {
    auto url = boost::urls::parse_origin_form(
        std::string_view{target.data(), target.size()});
    auto params = url->params();
    auto get = [&](const char* key) {
      auto it = params.find(key);
      return it == params.end() ? std::string{} : std::string{(*it).value};
    };
    stream_ = json::object{{"agent_id", get("agent_id")},
                           {"session_id", get("session_id")},
                           {"run_id", get("run_id")}};
    for (const auto& kv : stream_)
      if (kv.value().as_string().empty()) {
        respond(400,
                error_body("stream requires agent_id, session_id and run_id",
                           "invalid_argument"),
                true);
        return;
      }
    streaming_ = true;
    keep_alive_ = false;
    bhttp::response<bhttp::empty_body> res{bhttp::status::ok, 11};
    res.set(bhttp::field::content_type, "text/event-stream");
    res.set(bhttp::field::cache_control, "no-cache");
    res.set(bhttp::field::server, "allox-workspace-daemon");
    res.keep_alive(false);
    bhttp::response_serializer<bhttp::empty_body> sr{res};
    sr.split(true);
    std::string head;
    beast::error_code ec;
    do {
      sr.next(ec, [&](beast::error_code&, const auto& buffers) {
        auto text = beast::buffers_to_string(buffers);
        head += text;
        sr.consume(text.size());
      });
    } while (!ec && !sr.is_header_done());
    send(std::move(head), false);
    poll_stream();
  }

  void poll_stream() {
    if (closing_)
      return;
    if (srv_->stopping()) {
      send("event: end\ndata: {\"reason\":\"daemon_shutdown\"}\n\n", true);
      return;
    }
    auto p = stream_;
    p["stream"] = stream_index_ == 0 ? "stdout" : "stderr";
    p["offset"] = offsets_[stream_index_];
    waiting_ = true;
    srv_->dispatch(this, "process.output", std::move(p));
  }

  void on_stream_reply(int status, const std::string& body) {
    boost::system::error_code ec;
    auto doc = json::parse(body, ec);
    if (status != 200 || ec || !doc.is_object() ||
        !doc.as_object().contains("result")) {
      send("event: error\ndata: " + body + "\n\n", true);
      return;
    }
    const auto& r = doc.as_object().at("result").as_object();
    const auto& data = r.at("data").as_string();
    int i = stream_index_;
    if (!data.empty()) {
      json::object payload{{"offset", offsets_[i]}, {"data", data}};
      send(std::string{"event: "} + (i == 0 ? "stdout" : "stderr") +
               "\ndata: " + json::serialize(payload) + "\n\n",
           false);
      fresh_data_ = true;
    }
    offsets_[i] = r.at("next_offset").to_number<int64_t>();
    eof_[i] = r.at("eof").as_bool();
    auto state = json::serialize(r.at("state"));
    if (state != last_state_) {
      last_state_ = state;
      send("event: state\ndata: {\"state\":" + state + "}\n\n", false);
    }
    if (i == 0) {
      stream_index_ = 1;
      poll_stream();
      return;
    }
    stream_index_ = 0;
    if (eof_[0] && eof_[1]) {
      send("event: end\ndata: {\"state\":" + state + "}\n\n", true);
      return;
    }
    if (fresh_data_) {
      fresh_data_ = false;
      poll_stream();
      return;
    }
    uv_timer_start(&timer_, on_timeout, stream_poll_ms, 0);
  }

  void handle_request() {
    auto req = parser_->release();
    reset_parser();
    if (req.method() == bhttp::verb::get && is_stream(req.target())) {
      start_stream(req.target());
      return;
    }
    if (req.method() == bhttp::verb::get) {
      if (req.target() == "/health")
        respond(200, R"({"status":"healthy"})", !keep_alive_);
      else
        respond(404, R"({"error":"not found","code":"not_found"})",
                !keep_alive_);
      return;
    }
    boost::system::error_code ec;
    auto doc = json::parse(req.body(), ec);
    if (ec) {
      respond(
          400,
          error_body("invalid JSON body: " + ec.message(), "invalid_argument"),
          !keep_alive_);
      return;
    }
    auto* obj = doc.if_object();
    const json::value* action = obj ? obj->if_contains("action") : nullptr;
    const json::value* params = obj ? obj->if_contains("params") : nullptr;
    if (obj == nullptr || action == nullptr || !action->is_string() ||
        (params != nullptr && !params->is_object() && !params->is_null())) {
      respond(400,
              error_body("request requires string action and object "
                         "params",
                         "invalid_argument"),
              !keep_alive_);
      return;
    }
    json::object p;
    if (params != nullptr && params->is_object())
      p = std::move(obj->at("params").as_object());
    waiting_ = true;
    srv_->dispatch(this, std::string{action->get_string()}, std::move(p));
  }

  void reject(int status, std::string_view message, std::string_view code) {
    std::string body =
        message.empty()
            ? std::string{R"({"error":"not found","code":"not_found"})"}
            : error_body(message, code);
    if (status == 401)
      body = R"({"error":"unauthorized","code":"unauthorized"})";
    respond(status, std::move(body), true);
  }

  void respond(int status, std::string body, bool close_after) {
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status),
                                            11};
    res.set(bhttp::field::content_type, "application/json");
    res.set(bhttp::field::server, "allox-workspace-daemon");
    res.keep_alive(!close_after);
    res.body() = std::move(body);
    res.prepare_payload();
    // Header and body leave in one write: with TCP_NODELAY the client never
    // waits for a delayed ACK between them.
    auto* w = new write_req{};
    w->conn = this;
    w->close_after = close_after;
    bhttp::serializer<false, bhttp::string_body> sr{res};
    beast::error_code ec;
    do {
      sr.next(ec, [&](beast::error_code&, const auto& buffers) {
        auto text = beast::buffers_to_string(buffers);
        w->data += text;
        sr.consume(text.size());
      });
    } while (!ec && !sr.is_done());
    uv_buf_t buf =
        uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
    w->req.data = w;
    writing_ = true;
    if (uv_write(&w->req, stream(), &buf, 1, on_written) != 0) {
      delete w;
      writing_ = false;
      close();
    }
  }

  /// Writes raw bytes of a streamed response; `last` closes afterwards.
  void send(std::string data, bool last) {
    auto* w = new write_req{};
    w->conn = this;
    w->close_after = last;
    w->stream = true;
    w->data = std::move(data);
    uv_buf_t buf =
        uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
    w->req.data = w;
    if (uv_write(&w->req, stream(), &buf, 1, on_written) != 0) {
      delete w;
      close();
    }
  }

  static void on_written(uv_write_t* req, int status) {
    auto* w = static_cast<write_req*>(req->data);
    auto* self = w->conn;
    bool close_after = w->close_after;
    if (w->stream) {
      delete w;
      if (status != 0 || close_after)
        self->close();
      return;
    }
    delete w;
    self->writing_ = false;
    if (status != 0) {
      self->close();
      return;
    }
    if (close_after) {
      if (self->refused_)
        self->close(); // it never sent a body worth draining
      else
        self->linger();
      return;
    }
    self->arm_timer();
    self->process();
  }

  // A closing connection first half-closes and reads (and drops) what the
  // client is still sending, so a client in the middle of a large request
  // reads our response instead of a connection reset.
  static constexpr size_t linger_limit = 4 << 20;
  static constexpr uint64_t linger_ms = 2000;

  void linger() {
    lingering_ = true;
    input_.clear();
    auto* req = new uv_shutdown_t{};
    req->data = this;
    if (uv_shutdown(req, stream(), [](uv_shutdown_t* r, int) { delete r; }) !=
        0) {
      delete req;
      close();
      return;
    }
    uv_timer_start(&timer_, on_timeout, linger_ms, 0);
  }

  static constexpr uint64_t stream_poll_ms = 50;
  bool streaming_ = false;
  json::object stream_;
  int stream_index_ = 0;
  int64_t offsets_[2] = {0, 0};
  bool eof_[2] = {false, false};
  bool fresh_data_ = false;
  std::string last_state_;

  server* srv_;
  bool refused_ = false;
  bool lingering_ = false;
  size_t lingered_ = 0;
  uv_tcp_t tcp_{};
  uv_timer_t timer_{};
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::string input_;
  bool header_checked_ = false;
  bool keep_alive_ = true;
  bool waiting_ = false;
  bool writing_ = false;
  bool closing_ = false;
  int pending_closes_ = 0;

  friend class server;
};

// -- server
// ---------------------------------------------------------------------

server::server(uv_loop_t* loop, server_options opts, dispatch_fn dispatch)
    : loop_(loop), opts_(std::move(opts)), dispatch_(std::move(dispatch)) {
  uv_async_init(loop_, &wakeup_, on_wakeup);
  wakeup_.data = this;
}

server::~server() = default;

caf::error server::listen() {
  sockaddr_storage addr{};
  auto host = opts_.host == "localhost" ? std::string{"127.0.0.1"} : opts_.host;
  bool v6 = host.find(':') != std::string::npos;
  int rc = v6 ? uv_ip6_addr(host.c_str(), opts_.port,
                            reinterpret_cast<sockaddr_in6*>(&addr))
              : uv_ip4_addr(host.c_str(), opts_.port,
                            reinterpret_cast<sockaddr_in*>(&addr));
  if (rc != 0)
    return make_error(errc::invalid_argument,
                      "invalid listen host: " + opts_.host);
  uv_tcp_init(loop_, &listener_);
  listener_.data = this;
  listening_ = true;
  auto where = opts_.host + ":" + std::to_string(opts_.port);
  if ((rc = uv_tcp_bind(&listener_, reinterpret_cast<sockaddr*>(&addr), 0)) !=
          0 ||
      (rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 511,
                      on_connection)) != 0)
    return make_error(errc::internal,
                      "cannot listen on " + where + ": " + uv_strerror(rc));
  sockaddr_storage bound{};
  int len = sizeof(bound);
  uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr*>(&bound), &len);
  bound_port_ = ntohs(bound.ss_family == AF_INET6
                          ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                          : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return caf::none;
}

void server::on_connection(uv_stream_t* listener, int status) {
  auto* srv = static_cast<server*>(listener->data);
  if (status < 0)
    return;
  auto conn = std::make_unique<connection>(srv, srv->loop_);
  if (uv_accept(listener, conn->stream()) != 0) {
    conn->close();
    srv->connections_.emplace(conn.get(), std::move(conn));
    return;
  }
  auto* raw = conn.get();
  size_t active = 0;
  for (const auto& [c, owned] : srv->connections_)
    active += c->active() ? 1 : 0;
  bool full = active >= srv->opts_.max_connections;
  srv->connections_.emplace(raw, std::move(conn));
  if (full) {
    raw->refuse();
    return;
  }
  raw->start();
}

uint64_t server::dispatch(connection* conn, std::string action,
                          json::object params) {
  auto ticket = next_ticket_++;
  tickets_.emplace(ticket, conn);
  dispatch_(ticket, std::move(action), std::move(params));
  return ticket;
}

void server::forget(connection* conn) {
  for (auto it = tickets_.begin(); it != tickets_.end();) {
    if (it->second == conn)
      it = tickets_.erase(it);
    else
      ++it;
  }
  connections_.erase(conn);
}

void server::post(rpc_reply reply) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_)
      return;
    replies_.push_back(std::move(reply));
  }
  uv_async_send(&wakeup_);
}

void server::on_wakeup(uv_async_t* async) {
  static_cast<server*>(async->data)->deliver_replies();
}

void server::deliver_replies() {
  std::deque<rpc_reply> batch;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    batch.swap(replies_);
  }
  for (auto& r : batch) {
    auto it = tickets_.find(r.ticket);
    if (it == tickets_.end())
      continue; // the client went away
    auto* conn = it->second;
    tickets_.erase(it);
    conn->answer(r.status, std::move(r.body));
  }
}

void server::stop_accepting() {
  if (!listening_)
    return;
  listening_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
}

void server::close() {
  stop_accepting();
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_)
      return;
    closed_ = true;
  }
  for (auto& [raw, conn] : connections_)
    conn->close();
  uv_close(reinterpret_cast<uv_handle_t*>(&wakeup_), nullptr);
}

} // namespace allox::http
