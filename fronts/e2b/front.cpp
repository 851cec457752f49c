// SPDX-License-Identifier: Apache-2.0
// The E2B actor: takes each request under /e2b, sends it to its part
// (control plane, envd's services, /files), and answers in E2B's shapes.
#include "fronts/e2b/handlers.hpp"
#include "fronts/e2b/signature.hpp"

#include "actors/dump.hpp"
#include "actors/failures.hpp"
#include "guest/http/server.hpp"
#include "guest/log.hpp"

#include <caf/send.hpp>

#include <chrono>

namespace allox::e2b {

namespace bhttp = boost::beast::http;

// -- requests -----------------------------------------------------------------

std::string request::header(std::string_view name) const {
  auto it = http().find(boost::beast::string_view{name.data(), name.size()});
  return it == http().end()
             ? std::string{}
             : std::string{it->value().data(), it->value().size()};
}

std::string request::param(std::string_view name) const {
  return fronts::query_param(query, name);
}

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch())
      .count();
}

// -- answers ------------------------------------------------------------------

void answer_json(const http::responder& r, int status, const json::value& v) {
  r({status, "application/json", status == 204 ? "" : json::serialize(v), {}});
}

void answer_error(const http::responder& r, int status,
                  std::string_view message) {
  r({status, "application/json", error_body(status, message), {}});
}

void answer_error(const http::responder& r, const caf::error& err) {
  r(error_response(err));
}

http::route_response error_response(const caf::error& err) {
  auto code = code_of(err);
  int status = 500;
  switch (code) {
  case errc::invalid_argument:
    status = 400;
    break;
  case errc::payload_too_large:
    status = 413;
    break;
  case errc::not_found:
    status = 404;
    break;
  case errc::already_exists:
  case errc::conflict:
    status = 409;
    break;
  case errc::unauthorized:
    status = 401;
    break;
  case errc::forbidden:
    status = 403;
    break;
  case errc::unsupported:
    status = 501;
    break;
  case errc::no_space:
    status = 507;
    break;
  case errc::internal:
    status = 500;
    break;
  }
  return {status, "application/json", error_body(status, message_of(err)), {}};
}

void connect_ok(const http::responder& r, const json::object& message) {
  r({200, std::string{connect::unary_json}, json::serialize(message), {}});
}

void connect_fail(const http::responder& r, const connect::error& e) {
  r({connect::http_status(e.code),
     std::string{connect::unary_json},
     json::serialize(connect::to_json(e)),
     {}});
}

void stream_fail(const http::responder& r, const connect::error& e) {
  http::route_response head{
      200, std::string{connect::stream_json}, connect::end_stream(e), {}};
  head.streaming = true;
  r(std::move(head));
  r.more({}, true);
}

expected<json::object> connect_body(const request& req, bool streaming) {
  std::string text = req.http().body();
  if (streaming) {
    auto one = connect::single_message(text);
    if (!one)
      return one.error();
    text = std::move(*one);
  }
  boost::system::error_code ec;
  auto doc = json::parse(text.empty() ? "{}" : text, ec);
  if (ec || !doc.is_object())
    return make_error(errc::invalid_argument,
                      "the request message is not a JSON object");
  return std::move(doc.as_object());
}

// -- paths --------------------------------------------------------------------

expected<std::string> workspace_path(std::string_view p) {
  if (p.empty())
    return std::string{};
  if (p.front() != '/')
    return std::string{p};
  if (p == home)
    return std::string{};
  if (p.size() > home.size() && p.compare(0, home.size(), home) == 0 &&
      p[home.size()] == '/')
    return std::string{p.substr(home.size() + 1)};
  if (p == "~")
    return std::string{};
  return make_error(errc::invalid_argument,
                    "path " + std::string{p} +
                        " is outside the sandbox's workspace: only " +
                        std::string{home} + " is served");
}

std::string e2b_path(std::string_view rel) {
  if (rel.empty() || rel == ".")
    return std::string{home};
  return std::string{home} + "/" + std::string{rel};
}

// -- envd ---------------------------------------------------------------------

namespace {

/// `sb` if it runs; else answered through `fail`, and null.
template <class Fail>
const sandbox* running(const sandbox& sb, Fail& fail) {
  if (sb.ending) {
    fail(502, connect::code::unavailable, "sandbox " + sb.id + " is ending");
    return nullptr;
  }
  if (sb.paused) {
    fail(502, connect::code::unavailable,
         "sandbox " + sb.id + " is paused; connect to resume it");
    return nullptr;
  }
  return &sb;
}

} // namespace

const sandbox* envd_sandbox(front_self self, request& req, bool connect_rpc) {
  auto fail = [&](int status, connect::code code, std::string msg) {
    if (connect_rpc)
      connect_fail(req.answer(), {code, std::move(msg)});
    else
      answer_error(req.answer(), status, msg);
  };
  auto id = req.header("E2b-Sandbox-Id");
  auto it = self->state.sandboxes.find(id);
  if (id.empty() || it == self->state.sandboxes.end()) {
    // What the SDK reads as "the sandbox is gone" (TimeoutError).
    fail(502, connect::code::unavailable,
         id.empty() ? "no E2b-Sandbox-Id header"
                    : "sandbox " + id + " is not running");
    return nullptr;
  }
  auto token = req.header("X-Access-Token");
  if (!http::secret_matches(token, it->second.access_token)) {
    fail(401, connect::code::unauthenticated,
         "X-Access-Token does not match the sandbox's envdAccessToken");
    return nullptr;
  }
  return running(it->second, fail);
}

const sandbox* files_sandbox(front_self self, request& req) {
  auto signature = req.param("signature");
  if (signature.empty() && req.header("X-Access-Token").empty()) {
    answer_error(req.answer(), 401,
                 "a /files URL needs X-Access-Token or a signature");
    return nullptr;
  }
  if (signature.empty() || !req.header("X-Access-Token").empty())
    return envd_sandbox(self, req, false);
  auto fail = [&req](int status, connect::code, std::string msg) {
    answer_error(req.answer(), status, msg);
  };
  signed_file f{req.param("path"),
                req.http().method() == bhttp::verb::get ? "read" : "write",
                req.param("username"), signature,
                req.param("signature_expiration")};
  // The sandbox its header names; a URL handed to a browser names none
  // (a Host of a sandbox's port goes to that port, ports.cpp), and the
  // sandbox is the one whose token signed it.
  auto id = req.header("E2b-Sandbox-Id");
  auto now_s = now_ms() / 1000;
  const sandbox* found = nullptr;
  caf::error why;
  auto& all = self->state.sandboxes;
  if (auto it = all.find(id); !id.empty() && it != all.end()) {
    why = check_file_signature(f, it->second.access_token, now_s);
    if (!why)
      found = &it->second;
  } else {
    for (const auto& [key, sb] : all)
      if (!check_file_signature(f, sb.access_token, now_s)) {
        found = &sb;
        break;
      }
    if (found == nullptr)
      why = check_file_signature(f, "", now_s); // says why: the time or not
  }
  if (found == nullptr) {
    fail(401, connect::code::unauthenticated,
         why ? message_of(why) : "the signature matches no sandbox");
    return nullptr;
  }
  return running(*found, fail);
}

namespace {

void serve_envd(front_self self, request& req) {
  auto& path = req.path;
  if (path == "/health") {
    // The SDK's isRunning(): any 2xx for a sandbox that runs.
    if (envd_sandbox(self, req, false) != nullptr)
      req.answer()({204, "application/json", "", {}});
    return;
  }
  if (path == "/files") {
    if (const auto* sb = files_sandbox(self, req))
      serve_files(self, req, *sb);
    return;
  }
  auto slash = path.find('/', 1);
  auto service = path.substr(1, slash == std::string::npos ? std::string::npos
                                                           : slash - 1);
  auto method =
      slash == std::string::npos ? std::string{} : path.substr(slash + 1);
  if (req.http().method() != bhttp::verb::post ||
      (service != "process.Process" && service != "filesystem.Filesystem")) {
    connect_fail(req.answer(),
                 {connect::code::unimplemented, "no such envd call: " + path});
    return;
  }
  const auto* sb = envd_sandbox(self, req, true);
  if (sb == nullptr)
    return;
  if (service == "process.Process")
    serve_process(self, req, *sb, method);
  else
    serve_filesystem(self, req, *sb, method);
}

void serve(front_self self, e2b_call& call) {
  if (!self->state.loaded) {
    self->state.waiting.push_back(std::move(call));
    return;
  }
  ++self->state.requests;
  request req{std::move(call), {}, {}};
  // The transport sends a request here for its Host only when that Host
  // names a sandbox's port (serve_e2b).
  if (auto where = parse_port_host(req.header("Host")))
    return serve_port(self, req, *where);
  auto target =
      std::string_view{req.http().target().data(), req.http().target().size()};
  auto q = target.find('?');
  req.path = std::string{target.substr(0, q)};
  if (q != std::string_view::npos)
    req.query = std::string{target.substr(q + 1)};
  // The SDK's signed URLs are built as new URL("/files", sandbox URL),
  // so they land at the root: the envd /files.
  if (req.path == "/files") {
    req.path = "/files";
    return serve_envd(self, req);
  }
  // Routed under /e2b/: strip it.
  req.path = req.path.substr(4);
  constexpr std::string_view envd = "/envd";
  if (req.path.compare(0, envd.size(), envd) == 0 &&
      (req.path.size() == envd.size() || req.path[envd.size()] == '/')) {
    req.path = req.path.substr(envd.size());
    if (req.path.empty())
      req.path = "/";
    return serve_envd(self, req);
  }
  serve_control(self, req);
}

} // namespace

e2b_actor::behavior_type front(front_self self, front_init init) {
  self->state.init = std::move(init);
  self->state.started = std::chrono::steady_clock::now();
  self->state.sessions.agents = self->state.init.agents;
  self->set_down_handler(
      [self](caf::down_msg& dm) { self->state.sessions.forget(dm.source); });
  self->set_exception_handler(
      [](std::exception_ptr& ep) { return actor_failed(ep, "e2b", ""); });
  // The sandboxes of earlier runs of the daemon: every session whose row
  // holds an E2B record (deadlines past while it was down end at the
  // first tick).
  self->request(self->state.init.metadata, caf::infinite, atom::load_v)
      .then(
          [self](catalog_snapshot& snap) {
            for (const auto& row : snap.sessions)
              if (row.front_record && !row.deleting)
                if (auto sb = from_record(row.agent_id, row.session_id,
                                          *row.front_record))
                  self->state.sandboxes.emplace(sb->id, std::move(*sb));
            self->state.loaded = true;
            auto waiting = std::move(self->state.waiting);
            for (auto& call : waiting)
              serve(self, call);
          },
          [self](caf::error& err) {
            // Without its records the front cannot tell its sandboxes;
            // failing makes the supervisor stop the daemon, loudly.
            self->quit(
                make_error(errc::internal, "e2b: cannot read the sandboxes: " +
                                               message_of(err)));
          });
  self->delayed_send(self, std::chrono::seconds{1}, atom::tick_v);
  return {
      [self](e2b_call& call) { serve(self, call); },
      [self](stream_pump p) { pump(self, p.stream); },
      [self](watch_pump p) { pump_watch(self, p.stream); },
      [self](atom::tick) {
        expire_sandboxes(self);
        self->delayed_send(self, std::chrono::seconds{1}, atom::tick_v);
      },
      [self](atom::stats) {
        auto& st = self->state;
        actor_stats s;
        s.kind = "e2b";
        s.top()
            .fact("state", st.streams.empty() ? "idle" : "busy")
            .gauge("mailbox", self->mailbox().size());
        s.group("counters")
            .counter("requests", st.requests)
            .counter("errors", st.errors)
            .gauge("sandboxes", st.sandboxes.size())
            .gauge("process_streams", st.streams.size())
            .gauge("watch_streams", st.watch_streams.size());
        s.top().gauge("uptime_ms", uptime_ms(st.started));
        return s;
      },
  };
}

void serve_e2b(http::server& srv, std::function<e2b_actor()> get) {
  auto serve = [get](const http::route_request& req, http::responder answer) {
    auto actor = get();
    if (!actor) {
      answer({503,
              "application/json",
              error_body(503, "the daemon is starting"),
              {}});
      return;
    }
    caf::anon_send(actor, e2b_call{req, std::move(answer)});
  };
  // The front checks its own keys (X-API-Key, X-Access-Token): E2B's
  // clients send no bearer token.
  for (auto method : {bhttp::verb::get, bhttp::verb::post, bhttp::verb::put,
                      bhttp::verb::delete_})
    srv.add_route({method, "/e2b/", http::route_match::prefix,
                   http::route_access::open, serve});
  // A sandbox's port, by Host: the daemon's own listener port is never
  // one (runs cannot reach it either).
  srv.set_host_route(
      [](std::string_view host) { return parse_port_host(host).has_value(); },
      [serve, &srv](const http::route_request& req, http::responder answer) {
        auto host = req[bhttp::field::host];
        auto where = parse_port_host({host.data(), host.size()});
        if (where &&
            (where->port == srv.port() || where->port == srv.metrics_port())) {
          answer({403,
                  "application/json",
                  error_body(403, "the daemon's own ports are not forwarded"),
                  {}});
          return;
        }
        serve(req, std::move(answer));
      });
  // /files streams (served on the head, planned by envd_files.cpp); at
  // the root too, for signed URLs (the signature is their credential).
  for (auto method : {bhttp::verb::get, bhttp::verb::post})
    for (const char* path : {"/e2b/envd/files", "/files"})
      srv.add_route({method, path, http::route_match::exact,
                     http::route_access::open, serve, 0, true});
}

} // namespace allox::e2b
