// SPDX-License-Identifier: Apache-2.0
#include "guest/http/event_endpoint.hpp"

#include "guest/http/server.hpp"
#include "guest/log.hpp"
#include "guest/os/unique_fd.hpp"
#include "messages/ids.hpp"
#include "messages/rpc.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <set>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 // Linux 6.5
#endif

namespace allox::http {

namespace {

constexpr uint64_t idle_ms = 30000;

const std::set<std::string, std::less<>> served = {
    "turn.session_start", "turn.message", "turn.end",     "turn.status",
    "policy.get",         "share.status", "share.enable", "share.disable",
    "share.list",         "share.read",   "share.write"};

/// The cgroup v2 path of `pid` (the "0::" line of /proc/<pid>/cgroup).
std::string cgroup_of(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/cgroup"};
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0)
      return line.substr(3);
  return {};
}

std::string line_of(std::string body) {
  body += '\n';
  return body;
}

} // namespace

/// One connected client.
struct event_endpoint::peer {
  event_endpoint* owner = nullptr;
  uv_pipe_t pipe{};
  uv_timer_t idle{};
  int open_handles = 0;
  bool closing = false;
  std::string agent, session;
  std::string in;
  /// A request is with the actors (reading paused).
  uint64_t ticket = 0;
};

event_endpoint::event_endpoint(uv_loop_t* loop, server* srv, call_fn call,
                               std::string path, std::string cgroup_root)
    : loop_(loop), srv_(srv), call_(std::move(call)), path_(std::move(path)),
      cgroup_root_(std::move(cgroup_root)) {}

event_endpoint::~event_endpoint() = default;

bool event_endpoint::session_of(const std::string& cgroup_root,
                                const std::string& cgroup, std::string& agent,
                                std::string& session) {
  auto prefix = cgroup_root + "/agents/";
  if (cgroup.rfind(prefix, 0) != 0)
    return false;
  auto rest = cgroup.substr(prefix.size());
  auto slash = rest.find('/');
  if (slash == std::string::npos)
    return false;
  agent = rest.substr(0, slash);
  rest = rest.substr(slash + 1);
  if (rest.rfind("sessions/", 0) != 0)
    return false;
  rest = rest.substr(9);
  session = rest.substr(0, rest.find('/'));
  return is_valid_id(agent) && is_valid_id(session);
}

caf::error event_endpoint::listen() {
  ::unlink(path_.c_str()); // a socket left by a daemon that died
  uv_pipe_init(loop_, &listener_, 0);
  listener_.data = this;
  if (int rc = uv_pipe_bind(&listener_, path_.c_str()); rc != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
    return make_error(errc::internal, "bind the event endpoint " + path_ +
                                          ": " + uv_strerror(rc));
  }
  ::chmod(path_.c_str(), 0666);
  if (int rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 128,
                         on_connection);
      rc != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
    return make_error(errc::internal, "listen on the event endpoint " + path_ +
                                          ": " + uv_strerror(rc));
  }
  listening_ = true;
  return caf::none;
}

void event_endpoint::close() {
  if (listening_) {
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
    listening_ = false;
    ::unlink(path_.c_str());
  }
  std::vector<peer*> all;
  for (auto& kv : peers_)
    all.push_back(kv.first);
  for (auto* p : all)
    drop(p);
}

void event_endpoint::on_connection(uv_stream_t* listener, int status) {
  if (status == 0)
    static_cast<event_endpoint*>(listener->data)->accept();
}

void event_endpoint::accept() {
  auto owned = std::make_unique<peer>();
  auto* p = owned.get();
  p->owner = this;
  uv_pipe_init(loop_, &p->pipe, 0);
  p->pipe.data = p;
  uv_timer_init(loop_, &p->idle);
  p->idle.data = p;
  p->open_handles = 2;
  peers_.emplace(p, std::move(owned));
  if (uv_accept(reinterpret_cast<uv_stream_t*>(&listener_),
                reinterpret_cast<uv_stream_t*>(&p->pipe)) != 0)
    return drop(p);
  // Who is calling: the kernel's word, never the request's.
  uv_os_fd_t fd = -1;
  uv_fileno(reinterpret_cast<uv_handle_t*>(&p->pipe), &fd);
  ucred cred{};
  socklen_t len = sizeof cred;
  bool known = ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
               cred.pid > 0;
  os::unique_fd pidfd;
  int raw = -1;
  len = sizeof raw;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &raw, &len) == 0)
    pidfd.reset(raw);
  std::string cgroup = known ? cgroup_of(cred.pid) : std::string{};
  // With a pidfd, the pid read above is still the peer's own (it has not
  // exited and been reused meanwhile).
  if (pidfd &&
      ::syscall(SYS_pidfd_send_signal, pidfd.get(), 0, nullptr, 0) != 0)
    cgroup.clear();
  if (cgroup.empty() ||
      !session_of(cgroup_root_, cgroup, p->agent, p->session)) {
    log::warn("endpoint", "refused a peer outside every session (pid " +
                              std::to_string(cred.pid) + ")");
    return reply(p,
                 error_body("the event endpoint serves only processes of a "
                            "session's runs",
                            "unauthorized"),
                 true);
  }
  uv_timer_start(
      &p->idle,
      [](uv_timer_t* t) {
        auto* q = static_cast<peer*>(t->data);
        q->owner->drop(q);
      },
      idle_ms, 0);
  start_reading(p);
}

void event_endpoint::start_reading(peer* p) {
  uv_read_start(reinterpret_cast<uv_stream_t*>(&p->pipe), on_alloc, on_read);
}

void event_endpoint::on_alloc(uv_handle_t*, size_t, uv_buf_t* buf) {
  static thread_local char chunk[16 << 10];
  *buf = uv_buf_init(chunk, sizeof chunk);
}

void event_endpoint::on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  auto* q = static_cast<peer*>(s->data);
  auto* self = q->owner;
  if (n < 0)
    return self->drop(q);
  if (self->buffered_ + static_cast<size_t>(n) > max_buffered)
    return self->reply(
        q, error_body("the event endpoint is busy; retry", "unavailable"),
        true);
  q->in.append(buf->base, static_cast<size_t>(n));
  self->buffered_ += static_cast<size_t>(n);
  auto nl = q->in.find('\n');
  if ((nl == std::string::npos ? q->in.size() : nl) > max_line)
    return self->reply(q,
                       error_body("request line longer than " +
                                      std::to_string(max_line) + " bytes",
                                  "payload_too_large"),
                       true);
  std::string line;
  if (!self->next_line(q, line))
    return;
  // One request at a time: the rest waits in the socket.
  uv_read_stop(s);
  self->serve_line(q, std::move(line));
}

bool event_endpoint::next_line(peer* p, std::string& line) {
  auto nl = p->in.find('\n');
  if (nl == std::string::npos)
    return false;
  line = p->in.substr(0, nl);
  p->in.erase(0, nl + 1);
  buffered_ -= nl + 1;
  return true;
}

void event_endpoint::serve_line(peer* p, std::string line) {
  boost::system::error_code ec;
  auto doc = json::parse(line, ec);
  const json::object* req = ec || !doc.is_object() ? nullptr : &doc.as_object();
  const json::value* action = req ? req->if_contains("action") : nullptr;
  const json::value* params = req ? req->if_contains("params") : nullptr;
  if (action == nullptr || !action->is_string() ||
      (params != nullptr && !params->is_object()))
    return reply(p,
                 error_body("expected one JSON line {\"action\": ..., "
                            "\"params\": {...}}",
                            "invalid_argument"),
                 false);
  std::string name{action->get_string()};
  bool share = name.rfind("share.", 0) == 0;
  if (served.count(name) == 0)
    return reply(p,
                 share ? error_body("unknown share action", "invalid_argument")
                       : error_body("the event endpoint serves turn.*, "
                                    "policy.get and share.*, not " +
                                        name,
                                    "unauthorized"),
                 false);
  json::object args = params ? params->as_object() : json::object{};
  if (share) {
    // The session is the caller here: the kernel says which, never the
    // request (reference 10.2).
    for (const char* key : {"agent_id", "session_id", "caller"})
      if (args.contains(key))
        return reply(p,
                     error_body("caller identity cannot be supplied by the "
                                "Agent",
                                "unauthorized"),
                     false);
  } else {
    for (auto [key, mine] : {std::pair{"agent_id", &p->agent},
                             std::pair{"session_id", &p->session}})
      if (auto* v = args.if_contains(key);
          v != nullptr && !(v->is_string() && v->get_string() == *mine))
        return reply(p,
                     error_body("this endpoint acts for " + p->agent + "/" +
                                    p->session + " only",
                                "unauthorized"),
                     false);
  }
  args["agent_id"] = p->agent;
  args["session_id"] = p->session;
  // Counted in the request metrics as the same action over /v1/rpc.
  auto answer = srv_->await(
      nullptr,
      [this, p](rpc_reply r) {
        p->ticket = 0;
        reply(p, std::move(r.body), false);
      },
      name);
  p->ticket = answer.ticket;
  call_(rpc_request{std::move(name), json::value(std::move(args)),
                    std::move(answer.reply)});
}

void event_endpoint::reply(peer* p, std::string body, bool close_after) {
  if (p->closing)
    return;
  // A refusal is closed once written (closing first would cancel it).
  struct write_req {
    uv_write_t req;
    std::string data;
    peer* p;
    bool close_after;
  };
  auto* w = new write_req{{}, line_of(std::move(body)), p, close_after};
  w->req.data = w;
  auto buf = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
  uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&p->pipe), &buf, 1,
           [](uv_write_t* r, int) {
             std::unique_ptr<write_req> done{static_cast<write_req*>(r->data)};
             if (done->close_after)
               done->p->owner->drop(done->p);
           });
  if (close_after) {
    uv_read_stop(reinterpret_cast<uv_stream_t*>(&p->pipe));
    return;
  }
  uv_timer_start(
      &p->idle,
      [](uv_timer_t* t) {
        auto* q = static_cast<peer*>(t->data);
        q->owner->drop(q);
      },
      idle_ms, 0);
  // The next line, if one came meanwhile, then reading again.
  if (std::string line; next_line(p, line))
    return serve_line(p, std::move(line));
  start_reading(p);
}

void event_endpoint::drop(peer* p) {
  if (p->closing)
    return;
  p->closing = true;
  buffered_ -= p->in.size();
  p->in.clear();
  if (p->ticket != 0)
    srv_->cancel(p->ticket);
  uv_timer_stop(&p->idle);
  auto closed = [](uv_handle_t* h) {
    auto* q = static_cast<peer*>(h->data);
    if (--q->open_handles == 0)
      q->owner->peers_.erase(q);
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&p->pipe), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&p->idle), closed);
}

} // namespace allox::http
