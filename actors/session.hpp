// The SESSION actor: single owner of one session workspace
// (agents/<a>/workspace/sessions/<s>/), its state and its mutations.
#pragma once

#include "guest/faults.hpp"
#include "guest/store/layout.hpp"
#include "messages/actors.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace allox {

/// What a session actor needs to (re)start.
struct session_init {
  std::string agent_id;
  std::string session_id;
  int64_t created_ns = 0;
  uint32_t restarts = 0;
  store::layout paths;
  metadata_actor metadata;
};

struct session_state {
  static inline const char* name = "session";

  session_init init;
  /// idle, mutating, deleting or retired.
  std::string phase = "idle";
  uint64_t requests = 0;
  uint64_t failures = 0;
  std::chrono::steady_clock::time_point started;
  fault_set faults;
};

session_actor::behavior_type
session(session_actor::stateful_pointer<session_state> self,
        session_init init);

/// The session.describe result.
json::object describe_session(const session_init& init);

} // namespace allox

