// SPDX-License-Identifier: Apache-2.0
// The E2B-compatible front (docs/e2b.md): E2B's control plane under /e2b
// and its in-sandbox API ("envd": process and filesystem services over
// the Connect protocol, /files, /health) under /e2b/envd, served on the
// daemon's listener. A sandbox is a session; every process is a run of it,
// every file call a file.* command of it. The HTTP loop hands each request
// whole to the E2B actor, which decodes it, calls the core's typed
// interfaces (messages/actors.hpp) and encodes E2B's answer.
//
//   loop thread          E2B actor                      core
//   route /e2b/ ---e2b_call---> decode, authorize
//                              control plane ----cmd----> AGENTS
//                              envd ---------cmd--------> SESSION
//   responder <----answer----- encode (JSON, Connect frames)
//   responder <---more frames- process streams: output read from the
//                              session (process.output) until the run's
//                              final row (process.wait)
#pragma once

#include "fronts/e2b/sandboxes.hpp"
#include "fronts/session_calls.hpp"
#include "guest/http/routes.hpp"
#include "messages/actors.hpp"

#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace allox::http {
class server;
}

namespace allox::e2b {

/// A request for the front, as the loop thread received it.
struct e2b_call {
  http::route_request request;
  http::responder answer;
};

/// The next step of a process stream (the actor's own timer).
struct stream_pump {
  uint64_t stream;
};

/// The next read of a WatchDir stream (the actor's own timer).
struct watch_pump {
  uint64_t stream;
};

/// The E2B actor.
using e2b_actor = caf::typed_actor<
    // Serves one request under /e2b.
    caf::reacts_to<e2b_call>,
    // Reads more of a process stream's output.
    caf::reacts_to<stream_pump>,
    // Reads a WatchDir stream's watch for changes.
    caf::reacts_to<watch_pump>,
    // Ends sandboxes past their deadline.
    caf::reacts_to<atom::tick>>::extend_with<stats_client_actor>;

struct front_init {
  agents_actor agents;
  /// Where each sandbox's record is kept (its session row), and read back
  /// at start.
  metadata_actor metadata;
  /// The daemon's token: X-API-Key must carry it (empty: any key).
  std::string token;
  /// The agent of sandboxes whose metadata names none (allox.agent).
  std::string default_agent = "e2b";
  /// The daemon runs processes (tracked execution); else the process
  /// service answers unimplemented.
  bool execution = false;
};

/// A process stream (process.Process Start or Connect): the run's output
/// as Connect frames until its end.
struct process_stream {
  explicit process_stream(http::responder a) : answer(std::move(a)) {}
  std::string sandbox;
  std::string agent;
  std::string run_id;
  uint32_t pid = 0;
  http::responder answer;
  /// Where the next stdout and stderr read starts.
  int64_t offsets[2] = {0, 0};
  /// A terminal: its output is sent as `pty` data.
  bool pty = false;
  /// The run's final row arrived: read to the ends of both logs, then end.
  bool final = false;
  caf::optional<run_row> last_row;
  /// Polls in a row that found nothing new (the next one waits longer).
  int idle = 0;
  bool reading = false;
  std::chrono::steady_clock::time_point last_sent;
};

/// A WatchDir stream: a watch of the sandbox's session, read on a timer.
struct watch_stream {
  explicit watch_stream(http::responder a) : answer(std::move(a)) {}
  std::string sandbox;
  std::string agent;
  int64_t watch_id = 0;
  http::responder answer;
  /// The client's Connect-Timeout-Ms: the stream ends then.
  std::chrono::steady_clock::time_point deadline;
  std::chrono::steady_clock::time_point last_sent;
};

/// A polling watcher (CreateWatcher): the session's watch it reads.
struct watcher {
  std::string sandbox;
  std::string agent;
  int64_t watch_id = 0;
};

struct front_state {
  static inline const char* name = "e2b";

  front_init init;
  /// By sandbox id (sorted: list pages go by id).
  std::map<std::string, sandbox> sandboxes;
  /// Session actors; entries leave when the actor dies.
  fronts::session_cache sessions;
  /// Process ids the SDK knows, per sandbox: pid -> run id.
  std::unordered_map<std::string, std::map<uint32_t, std::string>> pids;
  std::unordered_map<uint64_t, process_stream> streams;
  uint64_t next_stream = 1;
  std::unordered_map<uint64_t, watch_stream> watch_streams;
  /// Polling watchers by their id (handed to the client).
  std::map<std::string, watcher> watchers;
  /// The sandboxes of the catalog are known (start-up read it); requests
  /// before that wait here.
  bool loaded = false;
  std::vector<e2b_call> waiting;
  uint64_t requests = 0;
  uint64_t errors = 0;
  std::chrono::steady_clock::time_point started;
};

using front_self = e2b_actor::stateful_pointer<front_state>;

e2b_actor::behavior_type front(front_self self, front_init init);

/// Registers /e2b/ on `srv` (before it listens; the actor is spawned with
/// the tree, later): every request goes whole to what `get` returns, and
/// is answered 503 while that is null.
void serve_e2b(http::server& srv, std::function<e2b_actor()> get);

} // namespace allox::e2b

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::e2b::e2b_call)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::e2b::stream_pump)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::e2b::watch_pump)
