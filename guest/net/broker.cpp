// SPDX-License-Identifier: Apache-2.0
#include "guest/net/broker.hpp"

#include "guest/log.hpp"
#include "guest/net/proxy_connection.hpp"

#include <uv.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace allox::net {

struct broker::impl {
  uv_loop_t loop{};
  uv_async_t wake{};
  std::thread thread;
  std::mutex mu;
  std::vector<std::function<void()>> queue;
  std::map<std::string, proxy::site*> sites;
  std::vector<rule> forbidden;
};

namespace proxy {
namespace {

void try_connect(conn* c);

/// The guest's addresses, read again at most once a second: a netlink
/// dump per connection would cost the loop more than the policy itself
/// (loop thread only).
const std::vector<address>& own_addresses() {
  static std::vector<address> cached;
  static std::chrono::steady_clock::time_point read_at;
  auto now = std::chrono::steady_clock::now();
  if (cached.empty() || now - read_at > std::chrono::seconds{1}) {
    cached = local_addresses();
    read_at = now;
  }
  return cached;
}

/// Destinations no policy opens: the daemon's own listen addresses (and
/// --deny-connect), as the connect guard keeps runs from them, and the
/// unspecified addresses, which reach the guest itself.
decision forbidden(const std::vector<rule>& rules, uint16_t port,
                   const address& a) {
  static const auto unspecified = [] {
    std::vector<rule> r;
    for (const char* t : {"0.0.0.0/8:*", "[::]:*"})
      r.push_back(*parse_rule(t));
    return r;
  }();
  for (const auto* list : {&rules, &unspecified})
    for (const auto& r : *list)
      if (r.covers_port(port) && r.matches_address(a))
        return {false,
                "the guest's own service " + r.text + " is never reachable",
                r.text};
  return {true, {}, {}};
}

void on_connected(uv_connect_t* req, int status) {
  auto* c = static_cast<conn*>(req->data);
  if (c->closing)
    return;
  if (status == 0) {
    start_relay(c);
    return;
  }
  c->ev.error = std::string{"connect: "} + uv_strerror(status);
  close_handle(reinterpret_cast<uv_handle_t*>(c->upstream));
  c->upstream = nullptr;
  try_connect(c);
}

/// Connects to the next allowed address; 502 when none is left.
void try_connect(conn* c) {
  if (c->next >= c->candidates.size()) {
    c->owner->counters->failed.fetch_add(1);
    if (c->ev.error.empty())
      c->ev.error = "no address to connect to";
    refuse(c, 502,
           c->req.host + ":" + std::to_string(c->req.port) + ": " +
               c->ev.error);
    return;
  }
  const auto& sa = c->candidates[c->next++];
  c->ev.address = address::from(reinterpret_cast<const sockaddr*>(&sa)).text();
  c->upstream = new_handle<uv_tcp_t>(c);
  uv_tcp_init(c->client->loop, c->upstream);
  c->connector.data = c;
  int rc = uv_tcp_connect(&c->connector, c->upstream,
                          reinterpret_cast<const sockaddr*>(&sa), on_connected);
  if (rc != 0) {
    c->ev.error = std::string{"connect: "} + uv_strerror(rc);
    close_handle(reinterpret_cast<uv_handle_t*>(c->upstream));
    c->upstream = nullptr;
    try_connect(c);
  }
}

void deny(conn* c, const std::string& reason) {
  c->ev.allowed = false;
  c->ev.error = reason;
  c->owner->counters->refused.fetch_add(1);
  refuse(c, 403,
         c->req.host + ":" + std::to_string(c->req.port) +
             " refused by the egress policy: " + reason);
}

void on_resolved(uv_getaddrinfo_t* r, int status, addrinfo* res) {
  auto* c = static_cast<conn*>(r->data);
  c->resolving = false;
  if (c->closing) {
    uv_freeaddrinfo(res);
    maybe_free(c);
    return;
  }
  if (status != 0) {
    uv_freeaddrinfo(res);
    c->owner->counters->failed.fetch_add(1);
    c->ev.error = std::string{"does not resolve: "} + uv_strerror(status);
    refuse(c, 502, c->req.host + " " + c->ev.error);
    return;
  }
  const auto& own = own_addresses();
  std::string refusal;
  std::vector<address> seen;
  for (auto* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
      continue;
    auto a = address::from(ai->ai_addr);
    if (std::find(seen.begin(), seen.end(), a) != seen.end())
      continue;
    seen.push_back(a);
    auto d = forbidden(*c->owner->forbidden, c->req.port, a);
    if (d.allowed)
      d = c->policy->check_address(c->req.host, c->req.port, a, own);
    if (!d.allowed) {
      if (refusal.empty()) {
        refusal = d.reason;
        c->ev.address = a.text();
      }
      continue;
    }
    sockaddr_storage ss{};
    std::memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
    c->candidates.push_back(ss);
  }
  uv_freeaddrinfo(res);
  if (c->candidates.empty()) {
    deny(c, refusal.empty() ? "no address" : refusal);
    return;
  }
  c->ev.allowed = true;
  uv_timer_start(
      c->timer,
      [](uv_timer_t* t) {
        auto* late = static_cast<conn*>(t->data);
        late->owner->counters->failed.fetch_add(1);
        late->ev.error = "connect timed out after 15 s";
        refuse(late, 504, late->req.host + ": " + late->ev.error);
      },
      connect_timeout_ms, 0);
  try_connect(c);
}

/// The request is complete: check the name, then resolve.
void on_request(conn* c) {
  c->ev.host = c->req.host;
  c->ev.port = c->req.port;
  c->ev.kind = c->req.tunnel ? "tunnel" : "http";
  c->policy = c->owner->policy;
  auto d = c->policy->check_name(c->req.host, c->req.port);
  if (!d.allowed) {
    deny(c, d.reason);
    return;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  c->resolver.data = c;
  c->resolving = true;
  auto port = std::to_string(c->req.port);
  int rc = uv_getaddrinfo(c->client->loop, &c->resolver, on_resolved,
                          c->req.host.c_str(), port.c_str(), &hints);
  if (rc != 0) {
    c->resolving = false;
    c->ev.error = std::string{"resolve: "} + uv_strerror(rc);
    refuse(c, 502, c->ev.error);
  }
}

void on_header_alloc(uv_handle_t*, size_t, uv_buf_t* buf) {
  buf->base = static_cast<char*>(std::malloc(16 * 1024));
  buf->len = buf->base != nullptr ? 16 * 1024 : 0;
}

void on_header_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  auto* c = static_cast<conn*>(s->data);
  if (n > 0)
    c->in.append(buf->base, static_cast<size_t>(n));
  std::free(buf->base);
  if (c->closing)
    return;
  if (n < 0) {
    finish(c);
    return;
  }
  c->req = parse_proxy_request(c->in);
  if (c->req.what == proxy_request::state::incomplete)
    return;
  uv_read_stop(s);
  if (c->req.what == proxy_request::state::bad) {
    refuse(c, c->req.status, c->req.reason);
    return;
  }
  on_request(c);
}

void on_accept(uv_stream_t* listener, int status) {
  auto* s = static_cast<site*>(listener->data);
  if (status < 0 || s->closing)
    return;
  auto* c = new conn;
  c->owner = s;
  s->conns.insert(c);
  s->counters->open.fetch_add(1);
  s->counters->total.fetch_add(1);
  c->client = new_handle<uv_tcp_t>(c);
  uv_tcp_init(listener->loop, c->client);
  c->timer = new_handle<uv_timer_t>(c);
  uv_timer_init(listener->loop, c->timer);
  if (uv_accept(listener, reinterpret_cast<uv_stream_t*>(c->client)) != 0) {
    finish(c);
    return;
  }
  uv_tcp_nodelay(c->client, 1);
  uv_timer_start(
      c->timer,
      [](uv_timer_t* t) {
        auto* idle = static_cast<conn*>(t->data);
        if (!idle->relaying)
          finish(idle);
      },
      header_timeout_ms, 0);
  uv_read_start(reinterpret_cast<uv_stream_t*>(c->client), on_header_alloc,
                on_header_read);
}

void close_site(site* s) {
  s->closing = true;
  for (auto* c : std::set<conn*>{s->conns})
    finish(c);
  if (s->listener_open &&
      !uv_is_closing(reinterpret_cast<uv_handle_t*>(&s->listener)))
    uv_close(reinterpret_cast<uv_handle_t*>(&s->listener), [](uv_handle_t* h) {
      auto* closed = static_cast<site*>(h->data);
      closed->listener_open = false;
      maybe_free_site(closed);
    });
  else
    maybe_free_site(s);
}

} // namespace
} // namespace proxy

using namespace proxy;

broker::broker() : impl_(std::make_unique<impl>()) {}

expected<std::shared_ptr<broker>> broker::start(std::vector<rule> forbidden) {
  std::shared_ptr<broker> b{new broker};
  auto* i = b->impl_.get();
  i->forbidden = std::move(forbidden);
  if (int rc = uv_loop_init(&i->loop); rc != 0)
    return make_error(errc::internal,
                      std::string{"egress broker loop: "} + uv_strerror(rc));
  uv_async_init(&i->loop, &i->wake, [](uv_async_t* a) {
    auto* self = static_cast<impl*>(a->data);
    std::vector<std::function<void()>> work;
    {
      std::lock_guard<std::mutex> lock{self->mu};
      work.swap(self->queue);
    }
    for (auto& w : work)
      w();
  });
  i->wake.data = i;
  i->thread = std::thread{[i] {
    uv_run(&i->loop, UV_RUN_DEFAULT);
    uv_loop_close(&i->loop);
  }};
  return b;
}

broker::~broker() {
  auto* i = impl_.get();
  post([i] {
    for (auto& [key, s] : i->sites)
      close_site(s);
    i->sites.clear();
    uv_close(reinterpret_cast<uv_handle_t*>(&i->wake), nullptr);
  });
  if (i->thread.joinable())
    i->thread.join();
}

void broker::post(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock{impl_->mu};
    impl_->queue.push_back(std::move(work));
  }
  uv_async_send(&impl_->wake);
}

std::shared_ptr<const egress_counters> broker::attach(const std::string& key,
                                                      os::unique_fd listener,
                                                      egress_policy policy,
                                                      sink events) {
  auto counters = std::make_shared<egress_counters>();
  auto fd = listener.release();
  auto p = std::make_shared<const egress_policy>(std::move(policy));
  auto* i = impl_.get();
  post([i, key, fd, p, counters, events = std::move(events)]() mutable {
    if (auto it = i->sites.find(key); it != i->sites.end()) {
      close_site(it->second);
      i->sites.erase(it);
    }
    auto* s = new site;
    s->forbidden = &i->forbidden;
    s->policy = std::move(p);
    s->events = std::move(events);
    s->counters = counters;
    uv_tcp_init(&i->loop, &s->listener);
    s->listener.data = s;
    s->listener_open = true;
    int rc = uv_tcp_open(&s->listener, fd);
    if (rc != 0)
      ::close(fd); // not the handle's yet
    else
      rc = uv_listen(reinterpret_cast<uv_stream_t*>(&s->listener), 1024,
                     on_accept);
    if (rc != 0) {
      log::error("broker", "proxy socket of " + key + ": " + uv_strerror(rc));
      close_site(s);
      return;
    }
    i->sites[key] = s;
  });
  return counters;
}

void broker::set_policy(const std::string& key, egress_policy policy) {
  auto p = std::make_shared<const egress_policy>(std::move(policy));
  auto* i = impl_.get();
  post([i, key, p] {
    if (auto it = i->sites.find(key); it != i->sites.end())
      it->second->policy = p;
  });
}

void broker::detach(const std::string& key) {
  auto* i = impl_.get();
  post([i, key] {
    if (auto it = i->sites.find(key); it != i->sites.end()) {
      close_site(it->second);
      i->sites.erase(it);
    }
  });
}

} // namespace allox::net
