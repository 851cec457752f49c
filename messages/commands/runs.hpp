// SPDX-License-Identifier: Apache-2.0
// Commands of a session's runs facet (tracked execution): one struct per
// RPC action, decoded once by the RPC actor.
#pragma once

#include "messages/commands/command.hpp"
#include "messages/records.hpp"
#include "messages/results/network.hpp"
#include "messages/results/runs.hpp"
#include "messages/results/settings.hpp"
#include "messages/rpc.hpp"

#include <caf/allowed_unsafe_message_type.hpp>

#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace allox::cmd {

/// Most runs one session may hold at once (session.configure max_runs).
inline constexpr int64_t max_runs_limit = 64;

/// Most rules in each of a session's egress allow and deny lists.
inline constexpr size_t max_egress_rules = 256;

/// Default and maximum run timeout (seconds), as the prototype.
inline constexpr double default_run_timeout = 300;
inline constexpr double max_run_timeout = 86400;

/// One change of session.configure's `limits`: a cgroup control file and
/// its new value, or `clear` to fall back to the daemon default.
struct limit_change {
  std::string name;
  /// Empty when the caller's value was neither a string nor a positive
  /// integer (refused by the session with the file's name).
  std::string value;
  bool clear = false;
};

/// session.configure {reset?, network?, egress?, limits?, max_runs?,
/// origin?}. The values are checked by the session (cgroup controllers,
/// egress rule syntax).
struct session_configure {
  static inline const char* name = "session.configure";
  static session_configure decode(params::reader& r);
  static constexpr bool needs_exec = true;
  using reply = settings_view;
  session_ref session;
  bool reset = false;
  /// "inherit", "isolated" or "proxy"; empty: unchanged.
  std::string network;
  /// egress {allow, deny} of proxy mode given (null clears both).
  bool has_egress = false;
  std::vector<std::string> egress_allow;
  std::vector<std::string> egress_deny;
  bool has_limits = false;
  std::vector<limit_change> limits;
  /// Runs the session may hold at once (1..max_runs_limit); absent:
  /// unchanged.
  caf::optional<int64_t> max_runs;
  std::string origin;
};

/// network.configure {mode, origin?}: a session.configure of the mode
/// alone, answered as network.status.
struct network_configure {
  static inline const char* name = "network.configure";
  static network_configure decode(params::reader& r);
  static constexpr bool needs_exec = true;
  using reply = network_status_view;
  session_ref session;
  session_configure change;
};

/// A terminal's size in characters.
struct terminal_size {
  uint16_t rows = 24;
  uint16_t cols = 80;
};

/// process.start {argv, env?, timeout?, stdin?, pty?, cwd?, home?}.
struct process_start {
  static inline const char* name = "process.start";
  static process_start decode(params::reader& r);
  static constexpr bool needs_exec = true;
  /// What the session answers (the native front encodes it).
  using reply = run_row;
  session_ref session;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  double timeout = default_run_timeout;
  /// A pipe to the run's stdin, fed by process.input.
  bool stdin_pipe = false;
  /// A pseudo-terminal for stdin, stdout and stderr.
  caf::optional<terminal_size> pty;
  /// Where the run starts, an absolute path inside the sandbox; empty:
  /// `home`, else /workspace.
  std::string cwd;
  /// A second place the workspace appears at, /home/<user>, which HOME and
  /// USER then name (the view of clients that expect a home directory);
  /// empty: /workspace only.
  std::string home;
};

/// process.input {run_id, data?, eof?}: bytes for the run's stdin or
/// terminal; `eof` closes a pipe (a terminal gets ^D).
struct process_input {
  static inline const char* name = "process.input";
  static process_input decode(params::reader& r);
  using reply = input_result;
  static constexpr bool needs_exec = true;
  session_ref session;
  std::string run_id;
  std::string data;
  bool eof = false;
};

/// process.resize {run_id, rows, cols}: a terminal run's new size.
struct process_resize {
  static inline const char* name = "process.resize";
  static process_resize decode(params::reader& r);
  using reply = resize_result;
  static constexpr bool needs_exec = true;
  session_ref session;
  std::string run_id;
  terminal_size size;
};

/// process.get {run_id}: the run's row, live or from its history.
struct process_get {
  static inline const char* name = "process.get";
  static process_get decode(params::reader& r);
  static constexpr bool needs_exec = true;
  /// What the session answers (the native front encodes it).
  using reply = run_row;
  session_ref session;
  std::string run_id;
};

/// process.list {limit?, cursor?}: the session's runs, oldest first; all
/// of them without `limit`, else a page after `cursor` (a run id).
struct process_list {
  static inline const char* name = "process.list";
  static process_list decode(params::reader& r);
  static constexpr bool needs_exec = true;
  /// What the session answers (the native front encodes it).
  using reply = run_list;
  session_ref session;
  /// 0: every run (the prototype's answer, a bare array).
  int64_t limit = 0;
  std::string cursor;
};

/// process.stop {run_id}: kills the run's tree; replies with the final row.
struct process_stop {
  static inline const char* name = "process.stop";
  static process_stop decode(params::reader& r);
  static constexpr bool needs_exec = true;
  /// What the session answers (the native front encodes it).
  using reply = run_row;
  session_ref session;
  std::string run_id;
};

/// process.wait {run_id, timeout_ms?}: replies with the run's row the
/// moment it ends, or with the current row once timeout_ms passed.
struct process_wait {
  static inline const char* name = "process.wait";
  static process_wait decode(params::reader& r);
  static constexpr bool needs_exec = true;
  /// What the session answers (the native front encodes it).
  using reply = run_row;
  session_ref session;
  std::string run_id;
  int64_t timeout_ms = 30000;
};

/// A live stream's subscription (GET /v1/stream): the session pushes the
/// run's row to `sink` on every state change until the run ends; replies
/// {row, dir}. Local only.
struct process_subscribe {
  static inline const char* name = "process.subscribe";
  using reply = run_subscription;
  session_ref session;
  std::string run_id;
  std::shared_ptr<run_sink> sink;
};

/// process.output {run_id, stream?, offset?, limit?}.
struct process_output {
  static inline const char* name = "process.output";
  static process_output decode(params::reader& r);
  static constexpr bool needs_exec = true;
  /// What the session answers (the native front encodes it).
  using reply = output_slice;
  session_ref session;
  std::string run_id;
  /// "stdout" or "stderr".
  std::string stream = "stdout";
  int64_t offset = 0;
  int64_t limit = 65536;
};

/// process.events {run_id, after?, limit?}.
struct process_events {
  static inline const char* name = "process.events";
  static process_events decode(params::reader& r);
  static constexpr bool needs_exec = true;
  /// What the session answers (the native front encodes it).
  using reply = event_page;
  session_ref session;
  std::string run_id;
  int64_t after = 0;
  int64_t limit = 100;
};

/// process.tree {run_id}: the run's process tree, nested from its root.
struct process_tree {
  static inline const char* name = "process.tree";
  static process_tree decode(params::reader& r);
  static constexpr bool needs_exec = true;
  /// What the session answers (the native front encodes it).
  using reply = process_tree_view;
  session_ref session;
  std::string run_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, limit_change& x) {
  return f(caf::meta::type_name("limit_change"), x.name, x.value, x.clear);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_configure& x) {
  return f(caf::meta::type_name("session_configure"), x.session, x.reset,
           x.network, x.has_egress, x.egress_allow, x.egress_deny, x.has_limits,
           x.limits, x.max_runs, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, network_configure& x) {
  return f(caf::meta::type_name("network_configure"), x.session, x.change);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, terminal_size& x) {
  return f(caf::meta::type_name("terminal_size"), x.rows, x.cols);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_start& x) {
  return f(caf::meta::type_name("process_start"), x.session, x.argv, x.env,
           x.timeout, x.stdin_pipe, x.pty);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_input& x) {
  return f(caf::meta::type_name("process_input"), x.session, x.run_id, x.data,
           x.eof);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_resize& x) {
  return f(caf::meta::type_name("process_resize"), x.session, x.run_id, x.size);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_get& x) {
  return f(caf::meta::type_name("process_get"), x.session, x.run_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_list& x) {
  return f(caf::meta::type_name("process_list"), x.session, x.limit, x.cursor);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_stop& x) {
  return f(caf::meta::type_name("process_stop"), x.session, x.run_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_wait& x) {
  return f(caf::meta::type_name("process_wait"), x.session, x.run_id,
           x.timeout_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_output& x) {
  return f(caf::meta::type_name("process_output"), x.session, x.run_id,
           x.stream, x.offset, x.limit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_events& x) {
  return f(caf::meta::type_name("process_events"), x.session, x.run_id, x.after,
           x.limit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_tree& x) {
  return f(caf::meta::type_name("process_tree"), x.session, x.run_id);
}

} // namespace allox::cmd

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::cmd::process_subscribe)
