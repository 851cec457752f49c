// SPDX-License-Identifier: Apache-2.0
// The in-guest event endpoint: a Unix stream socket bound read-only into
// every run at /run/allox/events.sock, over which programs inside a
// sandbox publish turn events and share files with other sessions
// (share.*) without the management token.
//
//   request:  one JSON line {"action": "turn.end", "params": {...}}
//   reply:    one JSON line, the RPC envelope ({"ok": true, "result": ...}
//             or {"ok": false, "error", "code"})
//
// Who calls is never taken from the request: the peer's pid
// (SO_PEERCRED, pinned with SO_PEERPIDFD where the kernel has it) gives
// its cgroup, and only a process inside a session's group
// (<cgroup root>/agents/<a>/sessions/<s>/...) is served, for that session
// alone: for turn.* and policy.get, params naming another agent or session
// are refused; for share.*, where the session is the caller, params may
// not name one at all (nor a `caller`). Only the turn.* actions,
// policy.get and share.* are served. A line is at most 512 KiB (a
// share.write of 256 KiB in base64), all connections together buffer at
// most 16 MiB of unfinished lines, one request is served at a time per
// connection (the next line is not read before the reply), and a
// connection idle for 30 s is closed: a slow or hostile client holds a
// bounded part of the loop's memory, never an actor.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"
#include "messages/rpc.hpp"

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

namespace allox::http {

class server;

class event_endpoint {
public:
  /// Hands a request to the actors (the native front's RPC actor).
  using call_fn = std::function<void(rpc_request)>;

  /// Serves on `path` (replaced if a stale socket is there) for processes
  /// below `cgroup_root` (a path relative to the cgroup v2 mount, as
  /// /proc/<pid>/cgroup shows it). Requests go to the actors through
  /// `call`; their replies come back on the loop through `srv`.
  event_endpoint(uv_loop_t* loop, server* srv, call_fn call, std::string path,
                 std::string cgroup_root);
  ~event_endpoint();
  event_endpoint(const event_endpoint&) = delete;
  event_endpoint& operator=(const event_endpoint&) = delete;

  /// Binds and listens; the socket is mode 0666 (the sandbox user
  /// connects through the bind mount; its directory stays the daemon's).
  caf::error listen();

  /// Closes the listener and every connection (loop thread).
  void close();

  const std::string& path() const { return path_; }

  /// The session a process belongs to, from its cgroup path relative to
  /// the mount; false when it is in none below `cgroup_root`.
  static bool session_of(const std::string& cgroup_root,
                         const std::string& cgroup, std::string& agent,
                         std::string& session);

  /// Max bytes of one request line.
  static constexpr size_t max_line = 512 << 10;
  /// Max bytes of unfinished lines buffered over all connections.
  static constexpr size_t max_buffered = 16 << 20;

private:
  struct peer;
  static void on_connection(uv_stream_t* listener, int status);
  static void on_alloc(uv_handle_t* h, size_t size, uv_buf_t* buf);
  static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);
  void accept();
  void start_reading(peer* p);
  void serve_line(peer* p, std::string line);
  /// Takes the next complete line out of the peer's buffer.
  bool next_line(peer* p, std::string& line);
  void reply(peer* p, std::string body, bool close_after);
  void drop(peer* p);

  uv_loop_t* loop_;
  server* srv_;
  call_fn call_;
  std::string path_;
  std::string cgroup_root_;
  uv_pipe_t listener_{};
  bool listening_ = false;
  /// Bytes in every peer's buffer.
  size_t buffered_ = 0;
  std::unordered_map<peer*, std::unique_ptr<peer>> peers_;
};

} // namespace allox::http
