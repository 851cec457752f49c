// SPDX-License-Identifier: Apache-2.0
// Commands of a session's pause facet: session.pause holds every process
// of the session frozen (or stops them) and checkpoints its files;
// session.resume thaws them; session.usage reads what the session uses.
#pragma once

#include "messages/commands/command.hpp"
#include "messages/records.hpp"
#include "messages/results/pause.hpp"

#include <caf/meta/type_name.hpp>

#include <string>

namespace allox::cmd {

/// session.pause {keep_memory?, message?, origin?}: freezes the session's
/// cgroup (keep_memory, the default: its processes stay, stopped, in
/// memory) or stops its runs, then takes a checkpoint of its files.
struct session_pause {
  static inline const char* name = "session.pause";
  static session_pause decode(params::reader& r);
  using reply = pause_result;
  session_ref session;
  bool keep_memory = true;
  std::string message;
  std::string origin;
};

/// session.resume {origin?}: thaws a paused session's processes.
struct session_resume {
  static inline const char* name = "session.resume";
  static session_resume decode(params::reader& r);
  using reply = resume_result;
  session_ref session;
  std::string origin;
};

/// session.usage {}: CPU time, memory, processes and workspace disk use.
struct session_usage {
  static inline const char* name = "session.usage";
  static session_usage decode(params::reader& r);
  using reply = usage_report;
  session_ref session;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_pause& x) {
  return f(caf::meta::type_name("session_pause"), x.session, x.keep_memory,
           x.message, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_resume& x) {
  return f(caf::meta::type_name("session_resume"), x.session, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_usage& x) {
  return f(caf::meta::type_name("session_usage"), x.session);
}

} // namespace allox::cmd
