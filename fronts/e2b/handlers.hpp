// SPDX-License-Identifier: Apache-2.0
// Internal to the E2B front (fronts/e2b/*.cpp): answering in E2B's shapes,
// calling a sandbox's session, and the handlers each part serves.
#pragma once

#include "fronts/e2b/connect.hpp"
#include "fronts/e2b/front.hpp"
#include "messages/commands/command.hpp"
#include "messages/commands/runs.hpp"

#include <caf/stateful_actor.hpp>

#include <string>
#include <string_view>

namespace allox::e2b {

/// One request: its call, and its path below /e2b and query split off.
struct request {
  e2b_call call;
  std::string path;
  std::string query;

  const http::route_request& http() const { return call.request; }
  const http::responder& answer() const { return call.answer; }
  /// A header's value (empty when absent).
  std::string header(std::string_view name) const;
  /// A query parameter, percent-decoded (empty when absent).
  std::string param(std::string_view name) const;
};

// -- answers ------------------------------------------------------------------

/// A control-plane or /files answer.
void answer_json(const http::responder& r, int status, const json::value& v);

/// E2B's error {code, message} under `status`.
void answer_error(const http::responder& r, int status,
                  std::string_view message);

/// One of our errors as E2B's control plane shapes it.
void answer_error(const http::responder& r, const caf::error& err);
http::route_response error_response(const caf::error& err);

/// A unary Connect answer (always 200 and a JSON body).
void connect_ok(const http::responder& r, const json::object& message);

/// A unary Connect error.
void connect_fail(const http::responder& r, const connect::error& e);

/// A server stream that fails before its first message: 200, then the
/// end-stream frame carrying the error (the SDK reads errors there only).
void stream_fail(const http::responder& r, const connect::error& e);

// -- sessions -----------------------------------------------------------------

/// Sends `cmd` to the session of sandbox `id` of `agent`, through the
/// front's cache of session actors (fronts/session_calls.hpp).
template <class Command, class OnOk, class OnErr>
void call_session(front_self self, const std::string& agent,
                  const std::string& id, Command cmd, OnOk ok, OnErr fail) {
  fronts::call_session(self, self->state.sessions, session_ref{agent, id},
                       std::move(cmd), std::move(ok), std::move(fail));
}

// -- the parts ----------------------------------------------------------------

/// The control plane (control.cpp): everything under /e2b but /e2b/envd.
void serve_control(front_self self, request& req);

/// Keeps `sb`'s record in its session row (durably: the catalog is its
/// only copy across a restart), then `done` (control.cpp).
void save(front_self self, const sandbox& sb,
          std::function<void(caf::error)> done);

/// A new sandbox's settings (several runs at once; no network without
/// internet access) made on its session, then its record saved
/// (control.cpp).
void settle(front_self self, const sandbox& sb,
            std::function<void(caf::error)> done);
/// A new sandbox id: "i" and 19 hex digits.
std::string new_sandbox_id();

/// POST /sandboxes/{id}/snapshots {name?} (snapshots.cpp).
void take_snapshot(front_self self, request& req, const sandbox& sb,
                   const json::object& body);

/// GET /snapshots?sandboxID= (snapshots.cpp).
void list_snapshots(front_self self, request& req);

/// POST /sandboxes/{id}/fork {count?, timeout?} (snapshots.cpp).
void fork_sandbox(front_self self, request& req, const sandbox& sb,
                  const json::object& body);

/// A create whose templateID is a snapshot id: `sb` forked from it and
/// answered; false (nothing done) when it names no snapshot of a known
/// sandbox (snapshots.cpp).
bool create_from_snapshot(front_self self, const std::string& template_id,
                          sandbox sb, const http::responder& answer);

/// Pauses sandbox `id` (session.pause) and keeps its record; conflict
/// when it is paused already (pause.cpp).
void pause_sandbox(front_self self, const std::string& id, bool keep_memory,
                   std::function<void(caf::error)> done);
/// POST /sandboxes/{id}/pause {memory?}: 204, 409 when already paused.
void pause_route(front_self self, request& req, const sandbox& sb,
                 const json::object& body);
/// POST /v2/sandboxes/{id}/connect {timeout?}: a paused sandbox resumed
/// (201), a running one answered again (200, a longer timeout extends it).
void connect_to(front_self self, request& req, sandbox& sb,
                const json::object& body);
/// session.configure's network and egress for `r` (network.cpp).
cmd::session_configure network_settings(const network_request& r);
/// PUT /sandboxes/{id}/network {allow_internet_access?, allowOut?,
/// denyOut?}: the whole network replaced (omitted fields cleared), 204;
/// a change of mode while processes live is refused (409).
void network_route(front_self self, request& req, sandbox& sb,
                   const json::object& body);
/// GET /sandboxes/{id}/metrics: one sample from session.usage.
void metrics_route(front_self self, request& req, const sandbox& sb);
/// Ends sandboxes past their deadline (control.cpp).
void expire_sandboxes(front_self self);

/// The sandbox an envd request names (E2b-Sandbox-Id) if its access token
/// matches; else answered here with the error, and null.
const sandbox* envd_sandbox(front_self self, request& req, bool connect_rpc);

/// The sandbox of a /files request: by its access token as envd_sandbox,
/// or by a signature the SDK's uploadUrl/downloadUrl made (its header,
/// its Host `<port>-<id>.<domain>`, else the sandbox whose token signed
/// it); answered here with the error, and null.
const sandbox* files_sandbox(front_self self, request& req);
/// process.Process (envd_process.cpp); `method` after the service name.
void serve_process(front_self self, request& req, const sandbox& sb,
                   std::string_view method);

/// The next step of a process stream (envd_process.cpp).
void pump(front_self self, uint64_t stream);

/// filesystem.Filesystem (envd_files.cpp).
void serve_filesystem(front_self self, request& req, const sandbox& sb,
                      std::string_view method);

/// filesystem.Filesystem/WatchDir: a stream of the changes under a
/// directory, from a watch of the session (envd_watch.cpp).
void watch_dir(front_self self, request& req, const sandbox& sb);

/// The next read of WatchDir stream `stream` (envd_watch.cpp).
void pump_watch(front_self self, uint64_t stream);

/// filesystem.Filesystem's polling watchers: CreateWatcher,
/// GetWatcherEvents, RemoveWatcher (envd_watch.cpp).
void serve_watcher(front_self self, request& req, const sandbox& sb,
                   std::string_view method);

/// A Host `<port>-<sandbox>.<domain>` (the SDK's getHost(port)).
struct port_host {
  uint16_t port = 0;
  std::string id;
};

/// Length of the ids new_sandbox_id() makes: `i` and 19 hex digits.
inline constexpr size_t sandbox_id_size = 20;

/// The port and sandbox a Host names; none for a Host of another shape
/// (ports.cpp). Pure, and quick enough for the loop thread.
std::optional<port_host> parse_port_host(std::string_view host);

/// A request to a sandbox's port: tunnelled there once the session
/// connected to it (ports.cpp).
void serve_port(front_self self, request& req, const port_host& where);

/// GET and POST /files (envd_files.cpp): streamed routes, planned here and
/// moved by the transport.
void serve_files(front_self self, request& req, const sandbox& sb);

/// The answer to an upload, given the transfer's {files: [{path, size}]}.
http::route_response files_written(const json::object& result);

/// A path of E2B's view (absolute under /home/user, or relative to it) as
/// the session's workspace path; invalid_argument outside the home.
expected<std::string> workspace_path(std::string_view e2b_path);

/// The E2B path of a workspace path.
std::string e2b_path(std::string_view rel);

/// The body of a Connect call as JSON: unary (application/json) or a
/// server stream's single envelope.
expected<json::object> connect_body(const request& req, bool streaming);

/// Unix milliseconds now.
int64_t now_ms();

} // namespace allox::e2b
