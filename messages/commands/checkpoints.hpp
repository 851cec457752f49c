// SPDX-License-Identifier: Apache-2.0
// Commands of a session's checkpoints and rollback facets: one struct per
// RPC action, decoded once by the RPC actor (cmd::decode, command.hpp) and
// answered by the SESSION actor's handler for that type.
#pragma once

#include "messages/checkpoint_params.hpp"
#include "messages/commands/command.hpp"
#include "messages/fork_signal.hpp"
#include "messages/records.hpp"
#include "messages/results/checkpoints.hpp"
#include "messages/results/sessions.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace allox::params {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_create& x) {
  return f(caf::meta::type_name("checkpoint_create_params"), x.checkpoint_id,
           x.message, x.metadata, x.pinned, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rollback& x) {
  return f(caf::meta::type_name("rollback_params"), x.checkpoint_id,
           x.num_ancestors, x.scrub_runtime, x.kill_processes, x.origin,
           x.reset_token);
}

} // namespace allox::params

namespace allox::cmd {

/// checkpoint.list {cursor?, limit?}: without `limit` the prototype's full
/// list; with it, a page of `limit` records after `cursor`.
struct checkpoint_list {
  static inline const char* name = "checkpoint.list";
  static checkpoint_list decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = checkpoint_page;
  session_ref session;
  std::string cursor;
  /// 0: not paged.
  int64_t limit = 0;
};

/// checkpoint.describe {checkpoint_id}: one record (id, prefix or alias).
struct checkpoint_describe {
  static inline const char* name = "checkpoint.describe";
  static checkpoint_describe decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = checkpoint_view;
  session_ref session;
  std::string checkpoint_id;
};

/// checkpoint.diff {from, to?, cursor?, limit?}: paths changed between two
/// checkpoints, or between one and current/ when `to` is absent.
struct checkpoint_diff {
  static inline const char* name = "checkpoint.diff";
  static checkpoint_diff decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = diff_page;
  session_ref session;
  std::string from;
  /// Empty: current/.
  std::string to;
  std::string cursor;
  int64_t limit = 1000;
  /// Name the run and process behind each change (write provenance).
  bool writers = false;
};

/// file.history {path, cursor?, limit?}: the checkpoints on the head's
/// line that changed `path` (a workspace path), newest first, each with
/// the writers of its change. `cursor`: the last checkpoint of the
/// previous page.
struct file_history {
  static inline const char* name = "file.history";
  static file_history decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = history_page;
  session_ref session;
  std::string path;
  std::string cursor;
  int64_t limit = 20;
};

/// checkpoint.create {checkpoint_id?, message?, metadata?, pinned?, origin?}.
struct checkpoint_create {
  static inline const char* name = "checkpoint.create";
  static checkpoint_create decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = checkpoint_created;
  session_ref session;
  params::checkpoint_create req;
};

/// checkpoint.delete {checkpoint_id, force?, origin?}.
struct checkpoint_delete {
  static inline const char* name = "checkpoint.delete";
  static checkpoint_delete decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = checkpoint_deleted;
  session_ref session;
  std::string checkpoint_id;
  bool force = false;
  std::string origin;
};

/// session.rollback and session.rollback_after_runtime_reset
/// {checkpoint_id | num_ancestors, scrub_runtime?, kill_processes?,
/// reset_token (after a reset only), origin?}.
struct session_rollback {
  static inline const char* name = "session.rollback";
  /// `kill_default` is the daemon's --kill-session-processes-on-rollback;
  /// the extra arguments keep it out of is_action (its own routing row).
  static session_rollback decode(params::reader& r, bool after_reset,
                                 bool kill_default);
  /// What the session answers (the native front encodes it).
  using reply = rollback_result;
  session_ref session;
  params::rollback req;
  bool after_reset = false;
};

/// Sent by the AGENT for session.fork: on this session's lane, the new
/// session's directory and its baseline's intent record, then a writable
/// snapshot of one of this session's checkpoints as its current/, and a
/// read-only one as its baseline, so no checkpoint.delete can race them.
/// Replies {checkpoint_id} (the id resolved) once current/ is made; the
/// baseline follows once `answered` is ready.
struct session_fork_into {
  static inline const char* name = "session.fork";
  using reply = fork_current_made;
  session_ref session;
  std::string checkpoint_id;
  /// The new session's baseline row (its agent, session and id name the
  /// directories made).
  checkpoint_row baseline;
  /// Ready once the fork is answered, or has failed: the baseline waits
  /// for it. Told by the agent (local only: not inspected, never
  /// serialized, as baseline_made).
  fork_ready answered;
  /// Told once the baseline is made.
  std::shared_ptr<fork_signal> baseline_made;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_list& x) {
  return f(caf::meta::type_name("checkpoint_list"), x.session, x.cursor,
           x.limit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_describe& x) {
  return f(caf::meta::type_name("checkpoint_describe"), x.session,
           x.checkpoint_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_history& x) {
  return f(caf::meta::type_name("file_history"), x.session, x.path, x.cursor,
           x.limit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_diff& x) {
  return f(caf::meta::type_name("checkpoint_diff"), x.session, x.from, x.to,
           x.cursor, x.limit, x.writers);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_create& x) {
  return f(caf::meta::type_name("checkpoint_create"), x.session, x.req);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_delete& x) {
  return f(caf::meta::type_name("checkpoint_delete"), x.session,
           x.checkpoint_id, x.force, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_rollback& x) {
  return f(caf::meta::type_name("session_rollback"), x.session, x.req,
           x.after_reset);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_fork_into& x) {
  return f(caf::meta::type_name("session_fork_into"), x.session,
           x.checkpoint_id, x.baseline);
}

} // namespace allox::cmd
