// SPDX-License-Identifier: Apache-2.0
// Commands of a session's runtime facet (execution leases, background
// executions, runtime reset, unfence) and of its lifecycle (describe,
// delete, fault injection): one struct per RPC action.
#pragma once

#include "messages/commands/command.hpp"
#include "messages/records.hpp"
#include "messages/results/admin.hpp"
#include "messages/results/runtime.hpp"
#include "messages/results/sessions.hpp"

#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <string>

namespace allox::cmd {

/// execution.acquire {}: an exclusive lease; replies {lease_token}.
struct execution_acquire {
  static inline const char* name = "execution.acquire";
  static execution_acquire decode(params::reader& r);
  using reply = lease_granted;
  session_ref session;
};

/// execution.release {lease_token}: routed by the token that names it.
struct execution_release {
  static inline const char* name = "execution.release";
  static execution_release decode(params::reader& r);
  using reply = lease_released;
  session_ref session;
  std::string lease_token;
};

/// runtime.register_background {sandbox_id, execution_id}.
struct runtime_register_background {
  static inline const char* name = "runtime.register_background";
  static runtime_register_background decode(params::reader& r);
  using reply = background_registered;
  session_ref session;
  std::string sandbox_id;
  std::string execution_id;
};

/// runtime.begin_reset {kill_processes?}: fences the session; replies
/// {reset_token, executions, terminated_process_runs?}.
struct runtime_begin_reset {
  static inline const char* name = "runtime.begin_reset";
  static runtime_begin_reset decode(params::reader& r);
  using reply = reset_begun;
  session_ref session;
  /// Absent: the daemon's --kill-session-processes-on-rollback.
  caf::optional<bool> kill_processes;
};

/// runtime.complete_reset {reset_token, success?}: routed by the token.
struct runtime_complete_reset {
  static inline const char* name = "runtime.complete_reset";
  static runtime_complete_reset decode(params::reader& r);
  using reply = reset_completed;
  session_ref session;
  std::string reset_token;
  bool success = false;
};

/// session.unfence {origin?}: clears leases, registrations and a reset.
struct session_unfence {
  static inline const char* name = "session.unfence";
  static session_unfence decode(params::reader& r);
  using reply = unfence_result;
  session_ref session;
  std::string origin;
};

/// session.describe {}.
struct session_describe {
  static inline const char* name = "session.describe";
  static session_describe decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = session_view;
  session_ref session;
};

/// session.delete {origin?}: sent by the owning AGENT, which forgets the
/// session once it succeeded.
struct session_delete {
  static inline const char* name = "session.delete";
  using reply = session_deleted;
  session_ref session;
  std::string origin;
};

/// debug.fault {point, effect, millis?}: arms a fault (test builds).
struct debug_fault {
  static inline const char* name = "debug.fault";
  using reply = fault_armed;
  session_ref session;
  std::string point;
  std::string effect;
  uint32_t millis = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, execution_acquire& x) {
  return f(caf::meta::type_name("execution_acquire"), x.session);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, execution_release& x) {
  return f(caf::meta::type_name("execution_release"), x.session, x.lease_token);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f,
                                        runtime_register_background& x) {
  return f(caf::meta::type_name("runtime_register_background"), x.session,
           x.sandbox_id, x.execution_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, runtime_begin_reset& x) {
  return f(caf::meta::type_name("runtime_begin_reset"), x.session,
           x.kill_processes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f,
                                        runtime_complete_reset& x) {
  return f(caf::meta::type_name("runtime_complete_reset"), x.session,
           x.reset_token, x.success);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_unfence& x) {
  return f(caf::meta::type_name("session_unfence"), x.session, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_describe& x) {
  return f(caf::meta::type_name("session_describe"), x.session);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_delete& x) {
  return f(caf::meta::type_name("session_delete"), x.session, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, debug_fault& x) {
  return f(caf::meta::type_name("debug_fault"), x.session, x.point, x.effect,
           x.millis);
}

} // namespace allox::cmd
