// SPDX-License-Identifier: Apache-2.0
#include "guest/http/server.hpp"

#include "guest/http/connection.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <stdexcept>

namespace allox::http {

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

bool secret_matches(std::string_view given, std::string_view secret) {
  if (secret.empty() || given.size() != secret.size())
    return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < secret.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ secret[i]);
  return diff == 0;
}

// -- server
// ---------------------------------------------------------------------

server::server(uv_loop_t* loop, server_options opts)
    : loop_(loop), opts_(std::move(opts)) {
  uv_async_init(loop_, &wakeup_, on_wakeup);
  wakeup_.data = this;
}

server::~server() = default;

expected<uint16_t> server::bind(uv_tcp_t& handle, const std::string& host_in,
                                uint16_t port, uv_connection_cb cb) {
  sockaddr_storage addr{};
  auto host = host_in == "localhost" ? std::string{"127.0.0.1"} : host_in;
  bool v6 = host.find(':') != std::string::npos;
  int rc = v6 ? uv_ip6_addr(host.c_str(), port,
                            reinterpret_cast<sockaddr_in6*>(&addr))
              : uv_ip4_addr(host.c_str(), port,
                            reinterpret_cast<sockaddr_in*>(&addr));
  if (rc != 0)
    return make_error(errc::invalid_argument,
                      "invalid listen host: " + host_in);
  uv_tcp_init(loop_, &handle);
  handle.data = this;
  auto where = host_in + ":" + std::to_string(port);
  if ((rc = uv_tcp_bind(&handle, reinterpret_cast<sockaddr*>(&addr), 0)) != 0 ||
      (rc = uv_listen(reinterpret_cast<uv_stream_t*>(&handle), 511, cb)) != 0)
    return make_error(errc::internal,
                      "cannot listen on " + where + ": " + uv_strerror(rc));
  sockaddr_storage bound{};
  int len = sizeof(bound);
  uv_tcp_getsockname(&handle, reinterpret_cast<sockaddr*>(&bound), &len);
  return ntohs(bound.ss_family == AF_INET6
                   ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                   : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

caf::error server::listen() {
  listening_ = true;
  auto port = bind(listener_, opts_.host, opts_.port, on_connection);
  if (!port)
    return port.error();
  bound_port_ = *port;
  if (opts_.metrics_host.empty())
    return caf::none;
  metrics_listening_ = true;
  auto mport = bind(metrics_listener_, opts_.metrics_host, opts_.metrics_port,
                    on_metrics_connection);
  if (!mport)
    return mport.error();
  metrics_bound_port_ = *mport;
  return caf::none;
}

void server::on_connection(uv_stream_t* listener, int status) {
  if (status >= 0)
    static_cast<server*>(listener->data)->accept(listener, false);
}

void server::on_metrics_connection(uv_stream_t* listener, int status) {
  if (status >= 0)
    static_cast<server*>(listener->data)->accept(listener, true);
}

void server::accept(uv_stream_t* listener, bool metrics_only) {
  auto* srv = this;
  auto conn = std::make_unique<connection>(srv, srv->loop_, metrics_only);
  if (uv_accept(listener, conn->stream()) != 0) {
    conn->close();
    srv->connections_.emplace(conn.get(), std::move(conn));
    return;
  }
  auto* raw = conn.get();
  // At the limit, the connection that has been quiet longest and holds no
  // work of the daemon (idle keep-alive, a trickling or stalled peer)
  // makes room; only when every slot is busy is the newcomer refused.
  size_t active = 0;
  connection* victim = nullptr;
  for (const auto& [c, owned] : srv->connections_) {
    if (!c->active())
      continue;
    ++active;
    if (c->evictable() &&
        (victim == nullptr || c->last_activity() < victim->last_activity()))
      victim = c;
  }
  srv->connections_.emplace(raw, std::move(conn));
  if (active >= srv->opts_.max_connections) {
    if (victim == nullptr) {
      raw->refuse();
      return;
    }
    ++srv->evicted_;
    victim->close();
  }
  raw->start();
}

server::held server::hold(connection* conn) {
  auto ticket = next_ticket_++;
  pending p;
  p.conn = conn;
  p.started = std::chrono::steady_clock::now();
  tickets_.emplace(ticket, std::move(p));
  return {ticket, [this, ticket](std::function<void(connection*)> task) {
            run_on_loop([this, ticket, task = std::move(task)] {
              auto it = tickets_.find(ticket);
              if (it == tickets_.end())
                return; // cancelled, or its connection went away
              auto* to = it->second.conn;
              tickets_.erase(it);
              task(to);
            });
          }};
}

awaited server::await(connection* conn, std::function<void(rpc_reply)> deliver,
                      std::string action) {
  auto h = hold(conn);
  auto started = std::chrono::steady_clock::now();
  return {h.ticket,
          [this, back = std::move(h.back), deliver = std::move(deliver),
           action = std::move(action), started](rpc_reply reply) {
            back([this, deliver, action, started,
                  reply = std::move(reply)](connection*) mutable {
              if (!action.empty())
                metrics_.observe(action, reply.status,
                                 std::chrono::duration<double>(
                                     std::chrono::steady_clock::now() - started)
                                     .count());
              deliver(std::move(reply));
            });
          }};
}

void server::add_route(route r) {
  for (const auto& known : routes_)
    if (known.method == r.method && known.path == r.path)
      throw std::logic_error("route registered twice: " + r.path);
  routes_.push_back(std::move(r));
}

void server::serve_route(connection* conn, const route& r, route_request req) {
  auto ticket = next_ticket_++;
  pending p;
  p.conn = conn;
  p.path = r.path;
  p.started = std::chrono::steady_clock::now();
  p.open = std::make_shared<std::atomic<bool>>(true);
  auto open = p.open;
  tickets_.emplace(ticket, std::move(p));
  r.serve(req, responder{this, ticket, std::move(open)});
}

void server::post_routed(uint64_t ticket, route_response response, bool more,
                         bool last) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_)
      return;
    routed_.push_back(
        {ticket, std::move(response), more, last, nullptr, nullptr});
  }
  uv_async_send(&wakeup_);
}

void server::post_plan(uint64_t ticket, transfer_plan plan) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_)
      return;
    routed_.push_back({ticket,
                       {},
                       false,
                       false,
                       std::make_shared<transfer_plan>(std::move(plan)),
                       nullptr});
  }
  uv_async_send(&wakeup_);
}

void server::post_tunnel(uint64_t ticket, int socket) {
  auto fd = std::make_shared<os::unique_fd>(socket);
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_)
      return;
    routed_.push_back({ticket, {}, false, false, nullptr, std::move(fd)});
  }
  uv_async_send(&wakeup_);
}

void server::set_host_route(std::function<bool(std::string_view)> claims,
                            route_fn serve) {
  host_claims_ = std::move(claims);
  host_route_ = route{};
  host_route_.method = boost::beast::http::verb::unknown;
  host_route_.path = "(host)";
  host_route_.match = route_match::prefix;
  host_route_.access = route_access::open;
  host_route_.serve = std::move(serve);
}

void server::drop_ticket(std::unordered_map<uint64_t, pending>::iterator it) {
  if (it->second.open)
    it->second.open->store(false, std::memory_order_relaxed);
  auto live = std::move(it->second.live);
  auto* conn = it->second.conn;
  tickets_.erase(it);
  if (live) {
    --live_;
    // Nothing reaches the front after `gone`, not even a drain.
    conn->live_.reset();
    conn->drain_wanted_ = false;
    if (live->gone)
      std::exchange(live->gone, nullptr)();
  }
}

live_answer server::open_live(uint64_t ticket, route_response head,
                              live_hooks hooks) {
  auto it = tickets_.find(ticket);
  if (it == tickets_.end() || it->second.streaming || !it->second.conn) {
    // Answered already or gone: the front hears so at once.
    if (hooks.gone)
      hooks.gone();
    return {};
  }
  head.streaming = true;
  observe(it->second.path, head, it->second.started);
  it->second.streaming = true;
  it->second.live = std::make_shared<live_hooks>(std::move(hooks));
  ++live_;
  auto* conn = it->second.conn;
  conn->live_ = it->second.live;
  conn->answer_route(std::move(head));
  if (stopping())
    // Opened on a connection kept alive into the shutdown: ended as the
    // others were, once the front holds its handle.
    run_on_loop([this, ticket] { stop_live(ticket); });
  return {this, ticket};
}

void server::stop_live(uint64_t ticket) {
  auto it = tickets_.find(ticket);
  if (it == tickets_.end())
    return;
  auto live = it->second.live;
  if (live && live->stopping)
    live->stopping();
  if (auto still = tickets_.find(ticket); still != tickets_.end())
    still->second.conn->close();
}

bool server::live_send(uint64_t ticket, std::string data, bool last) {
  auto it = tickets_.find(ticket);
  if (it == tickets_.end() || !it->second.live)
    return false;
  auto* conn = it->second.conn;
  if (!conn->active())
    return false; // closing: the front stops feeding
  if (last)
    drop_ticket(it);
  conn->answer_route_part(std::move(data), last);
  return true;
}

bool server::live_behind(uint64_t ticket) {
  auto it = tickets_.find(ticket);
  return it != tickets_.end() && it->second.live &&
         it->second.conn->live_behind();
}

live_answer responder::live(route_response head, live_hooks hooks) const {
  return srv_->open_live(ticket_, std::move(head), std::move(hooks));
}

bool live_answer::send(std::string data, bool last) const {
  return srv_ != nullptr && srv_->live_send(ticket_, std::move(data), last);
}

bool live_answer::behind() const {
  return srv_ != nullptr && srv_->live_behind(ticket_);
}

void responder::operator()(route_response response) const {
  srv_->post_routed(ticket_, std::move(response));
}

void responder::begin(transfer_plan plan) const {
  srv_->post_plan(ticket_, std::move(plan));
}

void responder::tunnel(int socket) const {
  srv_->post_tunnel(ticket_, socket);
}

void responder::more(std::string data, bool last) const {
  route_response part;
  part.body = std::move(data);
  srv_->post_routed(ticket_, std::move(part), true, last);
}

const route* find_route(const std::vector<route>& routes,
                        boost::beast::http::verb method,
                        std::string_view target) {
  auto path = target.substr(0, target.find('?'));
  const route* best = nullptr;
  for (const auto& r : routes) {
    if (r.method != method)
      continue;
    if (r.path == path) {
      if (r.bare && target.size() != path.size())
        continue;
      return &r;
    }
    bool prefix = r.match == route_match::prefix &&
                  path.substr(0, r.path.size()) == r.path;
    if (prefix && (best == nullptr || r.path.size() > best->path.size()))
      best = &r;
  }
  return best;
}

void server::transfer(connection* conn, cmd::file_transfer_begin step) {
  auto back = hold(conn).back;
  transfer_answer answer;
  answer.begun = [back](expected<transfer_begun> r) {
    back([r = std::move(r)](connection* c) { c->on_transfer_begun(r); });
  };
  if (!transfer_)
    return answer.begun(
        make_error(errc::unsupported, "file transfers are not served here"));
  transfer_(transfer_request{std::move(step), std::move(answer)});
}

void server::transfer(connection* conn, cmd::file_transfer_end step) {
  auto back = hold(conn).back;
  transfer_answer answer;
  answer.audited = [back](expected<transfer_audited> r) {
    back([err = r ? caf::error{} : r.error()](connection* c) {
      c->on_transfer_ended(err);
    });
  };
  if (!transfer_)
    return answer.audited(
        make_error(errc::unsupported, "file transfers are not served here"));
  transfer_(transfer_request{std::move(step), std::move(answer)});
}

bool server::charge_upload(const std::string& session, uint64_t bytes) {
  auto& used = uploads_[session];
  if (used + bytes > opts_.max_session_upload) {
    if (used == 0)
      uploads_.erase(session);
    return false;
  }
  used += bytes;
  return true;
}

void server::release_upload(const std::string& session, uint64_t bytes) {
  auto it = uploads_.find(session);
  if (it == uploads_.end())
    return;
  it->second -= std::min(it->second, bytes);
  if (it->second == 0)
    uploads_.erase(it);
}

void server::run_on_loop(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_)
      return;
    tasks_.push_back(std::move(task));
  }
  uv_async_send(&wakeup_);
}

void server::forget(connection* conn) {
  // Collected first: a live answer's front, told it is gone, may cancel
  // tickets of its own.
  std::vector<uint64_t> owned;
  for (const auto& [ticket, p] : tickets_)
    if (p.conn == conn)
      owned.push_back(ticket);
  for (auto ticket : owned)
    if (auto it = tickets_.find(ticket); it != tickets_.end())
      drop_ticket(it);
  connections_.erase(conn);
}

void server::on_wakeup(uv_async_t* async) {
  static_cast<server*>(async->data)->deliver_replies();
}

void server::deliver_replies() {
  std::deque<routed_part> routed;
  std::deque<std::function<void()>> tasks;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    routed.swap(routed_);
    tasks.swap(tasks_);
  }
  for (auto& part : routed) {
    auto it = tickets_.find(part.ticket);
    if (it == tickets_.end())
      continue; // answered already, or the client went away
    auto* conn = it->second.conn;
    if (part.tunnel) {
      if (it->second.streaming)
        continue;
      part.response.status = 101;
      observe(it->second.path, part.response, it->second.started);
      drop_ticket(it);
      conn->start_tunnel(std::move(*part.tunnel));
      continue;
    }
    if (part.plan) {
      // The request is the transfer's from now on (counted when it began).
      if (it->second.streaming)
        continue;
      if (part.plan->counted)
        observe(it->second.path, part.response, it->second.started);
      drop_ticket(it);
      conn->begin_planned(std::move(*part.plan));
      continue;
    }
    if (part.more) {
      // A part before its head, or after a plain answer, is a front's bug.
      if (!it->second.streaming)
        continue;
      if (part.last)
        drop_ticket(it);
      conn->answer_route_part(std::move(part.response.body), part.last);
      continue;
    }
    if (it->second.streaming)
      continue; // a second head
    // A streamed answer is counted when its head goes out.
    observe(it->second.path, part.response, it->second.started);
    if (part.response.streaming)
      it->second.streaming = true;
    else
      drop_ticket(it);
    conn->answer_route(std::move(part.response));
  }
  for (auto& task : tasks)
    task();
}

void server::observe(const std::string& route_path,
                     const route_response& response,
                     std::chrono::steady_clock::time_point started) {
  using tally = route_response::tally;
  if (response.counted_as == tally::none)
    return;
  if (response.counted_as == tally::rejected)
    return metrics_.rejected(response.status);
  metrics_.observe(
      response.action.empty() ? route_path : response.action, response.status,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count());
}

std::string server::transport_metrics(size_t own) const {
  server_gauges g;
  g.connections = connections_.size();
  auto waiting = tickets_.size() - live_;
  g.in_flight = waiting - std::min(own, waiting);
  g.evicted = evicted_;
  return metrics_.render(g);
}

void server::stop_accepting() {
  if (!listening_)
    return;
  listening_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
  if (metrics_listening_) {
    metrics_listening_ = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&metrics_listener_), nullptr);
  }
  // Streamed answers end now; they would otherwise hold the shutdown
  // open. A live answer's front has its last words; the others are cut
  // off (their front sees the responder closed), as their clients see
  // the daemon go.
  std::vector<uint64_t> streaming;
  for (auto& [ticket, p] : tickets_)
    if (p.streaming)
      streaming.push_back(ticket);
  for (auto ticket : streaming)
    stop_live(ticket);
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
