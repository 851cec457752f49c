// SPDX-License-Identifier: Apache-2.0
// The typed results of a session's runtime facet: execution leases,
// background executions of outside launchers, the runtime reset fence and
// session.unfence. The native wire's JSON of these is written in one
// place, messages/results/runtime_json.hpp.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace allox {

/// A lease handed out by execution.acquire; RPC remembers which session
/// issued the token, since execution.release names only the token.
struct lease_granted {
  std::string lease_token;
};

/// execution.release: whether the token named a lease (false: already
/// released, or never this session's).
struct lease_released {
  bool released = false;
};

/// runtime.register_background: the execution noted.
struct background_registered {
  std::string execution_id;
};

/// An outside launcher's execution, for the caller of a reset to end.
struct background_execution {
  std::string sandbox_id;
  std::string execution_id;
};

/// A runtime reset begun by runtime.begin_reset: the token (remembered by
/// RPC like a lease's) and the executions the caller must end first.
struct reset_begun {
  std::string reset_token;
  std::vector<background_execution> executions;
  /// kill_processes was asked for: the runs it killed (listed even when
  /// empty).
  bool terminated = false;
  std::vector<std::string> terminated_process_runs;
};

/// runtime.complete_reset: the fence is lifted.
struct reset_completed {
  bool success = false;
};

/// session.unfence: what the fence held, now cleared.
struct unfence_result {
  std::string agent_id;
  std::string session_id;
  /// A runtime reset was in progress.
  bool reset = false;
  uint64_t leases = 0;
  uint64_t background_executions = 0;
  /// Runs a daemon restart interrupted, now released in the catalog.
  std::vector<std::string> interrupted_runs;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lease_granted& x) {
  return f(caf::meta::type_name("lease_granted"), x.lease_token);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, background_execution& x) {
  return f(caf::meta::type_name("background_execution"), x.sandbox_id,
           x.execution_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reset_begun& x) {
  return f(caf::meta::type_name("reset_begun"), x.reset_token, x.executions,
           x.terminated, x.terminated_process_runs);
}

} // namespace allox

// Local messages only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::lease_released)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::background_registered)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::reset_completed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::unfence_result)
