// SPDX-License-Identifier: Apache-2.0
// Rows and batches exchanged with the METADATA actor.
#pragma once

#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

namespace allox {

/// An agent as persisted in the catalog.
struct agent_row {
  std::string agent_id;
  int64_t created_ns = 0;
  /// Set before the agent's directories are moved away for deletion, so a
  /// restart finishes the deletion instead of guessing.
  bool deleting = false;
  /// The agent's checkpoint policy (messages/policy.hpp) as the JSON text
  /// of an object; none when it sets nothing. Written with set_policies.
  caf::optional<std::string> policy{};
};

/// A session as persisted in the catalog.
struct session_row {
  std::string agent_id;
  std::string session_id;
  int64_t created_ns = 0;
  bool deleting = false;
  /// Head checkpoint, none before the first checkpoint (NULL in the
  /// catalog). Written with set_heads.
  caf::optional<std::string> head;
  /// session.configure settings as the JSON text of an object; none for the
  /// defaults (NULL in the catalog). Written with set_exec_settings.
  caf::optional<std::string> exec_settings;
  /// The turn lifecycle state (actors/session/turn_state.hpp) as JSON
  /// text; none before the first turn event. Written with set_turn_states.
  caf::optional<std::string> turn_state{};
  /// The session's own checkpoint policy, as agent_row::policy.
  caf::optional<std::string> policy{};
  /// The session's share.* policy ({enabled, scope, permission} as JSON
  /// text); none before the first share.enable. Written with
  /// set_share_policies.
  caf::optional<std::string> share_policy{};
  /// What the front that made the session keeps of it (JSON text, e.g.
  /// an E2B sandbox's template, metadata and deadline); none for the
  /// native wire's. Written with set_front_records.
  caf::optional<std::string> front_record{};
};

/// One checkpoint of a session's DAG. Absent values are none (NULL in the
/// catalog, null in replies); a present message may be empty.
struct checkpoint_row {
  std::string agent_id;
  std::string session_id;
  std::string checkpoint_id;
  int64_t created_at_ns = 0;
  std::string origin;
  /// The caller's message; none when it gave none ("" is a message).
  caf::optional<std::string> message;
  bool pinned = false;
  /// The JSON text of the caller's metadata object; none when it gave none.
  caf::optional<std::string> metadata;
  bool missing = false;
  /// The checkpoint this one was taken after; none for a root.
  caf::optional<std::string> parent_id;
  /// Btrfs generation at which the snapshot was taken (0 if unknown); lets
  /// checkpoint.diff skip trees unchanged since a common ancestor.
  int64_t generation = 0;
};

/// A session's pending crash-safe operation, written before each
/// filesystem step (rollback phases, checkpoint creation).
struct journal_row {
  std::string agent_id;
  std::string session_id;
  /// "rollback" or "checkpoint".
  std::string op;
  /// rollback: preparing, prepared, old_moved, committed;
  /// checkpoint: preparing.
  std::string phase;
  std::string checkpoint_id;
  std::string restore_name;
  std::string discard_name;
  bool scrub_runtime = true;
  std::string origin;
  /// For checkpoint: the complete row to commit with the snapshot.
  std::string payload;
};

/// A session's head pointer.
struct session_head {
  std::string agent_id;
  std::string session_id;
  /// None: the session has no head (NULL in the catalog).
  caf::optional<std::string> head;
};

/// A session's execution settings (session.configure).
struct session_settings {
  std::string agent_id;
  std::string session_id;
  /// The JSON text of an object; none for the defaults (NULL in the
  /// catalog).
  caf::optional<std::string> settings;
};

/// Identifies one session.
struct session_ref {
  std::string agent_id;
  std::string session_id;
};

/// One audit record; `fields` is the op-specific JSON object as text.
struct audit_event {
  int64_t timestamp_ns = 0;
  std::string op;
  std::string agent_id;
  std::string session_id;
  std::string fields = "{}";
};

/// One run as the catalog keeps it: the columns that index it, and its row
/// (the process.get result) as JSON text.
struct run_record {
  std::string run_id;
  std::string agent_id;
  std::string session_id;
  int64_t created_ns = 0;
  /// starting, running, completed, stopped, failed or interrupted.
  std::string state;
  /// The run fences its session (its row's session_fenced).
  bool fences = false;
  std::string row;
};

/// A question about runs: one run by id, or a page of one session's runs
/// ordered by creation. `after` is the exclusive cursor (a run id).
struct run_query {
  std::string run_id;
  std::string agent_id;
  std::string session_id;
  std::string after;
  /// 0: every run of the session.
  int64_t limit = 0;
};

/// The answer to a run_query.
struct run_page {
  std::vector<run_record> runs;
  bool has_more = false;
};

/// What one checkpoint's interval changed and who did it (write
/// provenance, actors/session/write_sets.hpp): kept outside the rollback
/// zone beside the checkpoint's row, and deleted with it.
struct write_set_row {
  std::string agent_id;
  std::string session_id;
  std::string checkpoint_id;
  /// The interval as JSON text (encoded and decoded by the session).
  std::string body;
};

/// One session's write sets, as the catalog holds them.
struct write_set_page {
  std::vector<write_set_row> rows;
};

/// A set of catalog changes committed atomically in one transaction.
struct metadata_write {
  std::vector<agent_row> put_agents;
  std::vector<std::string> delete_agents;
  std::vector<session_row> put_sessions;
  std::vector<session_ref> delete_sessions;
  std::vector<checkpoint_row> put_checkpoints;
  std::vector<checkpoint_row> delete_checkpoints;
  std::vector<session_head> set_heads;
  std::vector<session_settings> set_exec_settings;
  /// Sessions' turn lifecycle states (settings: the JSON text).
  std::vector<session_settings> set_turn_states;
  /// Checkpoint policies: a session's, or with an empty session_id the
  /// agent's.
  std::vector<session_settings> set_policies;
  /// Sessions' share.* policies (settings: the JSON text).
  std::vector<session_settings> set_share_policies;
  /// Sessions' front records (settings: the JSON text).
  std::vector<session_settings> set_front_records;
  std::vector<journal_row> put_journals;
  std::vector<session_ref> delete_journals;
  std::vector<audit_event> audit;
  /// New or changed runs (the whole row replaces the old one).
  std::vector<run_record> put_runs;
  /// Runs that no longer fence their session (session.unfence).
  std::vector<std::string> release_runs;
  /// Checkpoints' write sets (new, or changed by a deletion's fold).
  std::vector<write_set_row> put_write_sets;
  /// Records that a store written by the prototype was imported.
  bool mark_prototype_imported = false;
  /// Records that the runs saved as state.json files were imported.
  bool mark_runs_imported = false;
  /// False for writes that start-up recovery can redo from the disk: they
  /// commit without waiting for an fsync (still atomic, and safe against
  /// the daemon being killed; only a power cut can lose them).
  bool durable = true;
};

/// Everything the daemon needs at start to re-spawn its actors.
struct catalog_snapshot {
  std::vector<agent_row> agents;
  std::vector<session_row> sessions;
  std::vector<checkpoint_row> checkpoints;
  std::vector<journal_row> journals;
  /// Only the runs that matter at start: those still starting or running
  /// (a crash interrupted them) and those fencing their session.
  std::vector<run_record> runs;
  bool prototype_imported = false;
  bool runs_imported = false;
};

/// Filters and paging of audit.list; `after` is an exclusive cursor.
struct audit_query {
  std::string agent_id;
  std::string session_id;
  std::string op;
  int64_t after = 0;
  int64_t limit = 100;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_row& x) {
  return f(caf::meta::type_name("agent_row"), x.agent_id, x.created_ns,
           x.deleting, x.policy);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_row& x) {
  return f(caf::meta::type_name("session_row"), x.agent_id, x.session_id,
           x.created_ns, x.deleting, x.head, x.exec_settings, x.turn_state,
           x.policy, x.share_policy, x.front_record);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_row& x) {
  return f(caf::meta::type_name("checkpoint_row"), x.agent_id, x.session_id,
           x.checkpoint_id, x.created_at_ns, x.origin, x.message, x.pinned,
           x.metadata, x.missing, x.parent_id, x.generation);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, journal_row& x) {
  return f(caf::meta::type_name("journal_row"), x.agent_id, x.session_id, x.op,
           x.phase, x.checkpoint_id, x.restore_name, x.discard_name,
           x.scrub_runtime, x.origin, x.payload);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_head& x) {
  return f(caf::meta::type_name("session_head"), x.agent_id, x.session_id,
           x.head);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_settings& x) {
  return f(caf::meta::type_name("session_settings"), x.agent_id, x.session_id,
           x.settings);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_ref& x) {
  return f(caf::meta::type_name("session_ref"), x.agent_id, x.session_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, audit_event& x) {
  return f(caf::meta::type_name("audit_event"), x.timestamp_ns, x.op,
           x.agent_id, x.session_id, x.fields);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_record& x) {
  return f(caf::meta::type_name("run_record"), x.run_id, x.agent_id,
           x.session_id, x.created_ns, x.state, x.fences, x.row);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_query& x) {
  return f(caf::meta::type_name("run_query"), x.run_id, x.agent_id,
           x.session_id, x.after, x.limit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_page& x) {
  return f(caf::meta::type_name("run_page"), x.runs, x.has_more);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_set_row& x) {
  return f(caf::meta::type_name("write_set_row"), x.agent_id, x.session_id,
           x.checkpoint_id, x.body);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_set_page& x) {
  return f(caf::meta::type_name("write_set_page"), x.rows);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metadata_write& x) {
  return f(
      caf::meta::type_name("metadata_write"), x.put_agents, x.delete_agents,
      x.put_sessions, x.delete_sessions, x.put_checkpoints,
      x.delete_checkpoints, x.set_heads, x.set_exec_settings, x.set_turn_states,
      x.set_policies, x.set_share_policies, x.set_front_records, x.put_journals,
      x.delete_journals, x.audit, x.put_runs, x.release_runs, x.put_write_sets,
      x.mark_prototype_imported, x.mark_runs_imported, x.durable);
}

namespace detail {

/// An inspector that hands every field inspect() names to `fn` at once.
template <class F>
struct field_visitor {
  using result_type = void;
  F fn;
  template <class... Ts>
  void operator()(caf::meta::type_name_t, Ts&... xs) {
    fn(xs...);
  }
};

template <class F>
field_visitor(F) -> field_visitor<F>;

template <class T>
void append_field(std::vector<T>& into, std::vector<T>& from) {
  into.insert(into.end(), std::make_move_iterator(from.begin()),
              std::make_move_iterator(from.end()));
}

/// The flags hold if either write sets them: one durable part makes the
/// whole write durable, as in a batch (guest/store/catalog.cpp).
inline void append_field(bool& into, bool from) {
  into = into || from;
}

} // namespace detail

/// Appends every change of `from` to `into` (committed in one transaction,
/// `into`'s changes of each kind first). Walks the fields inspect() names,
/// so a new field cannot be forgotten here; tests/messages/records_test.cpp
/// checks that inspect() names every field.
inline void append(metadata_write& into, metadata_write&& from) {
  detail::field_visitor to{[&from](auto&... into_fields) {
    detail::field_visitor add{[&](auto&... from_fields) {
      (detail::append_field(into_fields, from_fields), ...);
    }};
    inspect(add, from);
  }};
  inspect(to, into);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, catalog_snapshot& x) {
  return f(caf::meta::type_name("catalog_snapshot"), x.agents, x.sessions,
           x.checkpoints, x.journals, x.runs, x.prototype_imported,
           x.runs_imported);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, audit_query& x) {
  return f(caf::meta::type_name("audit_query"), x.agent_id, x.session_id, x.op,
           x.after, x.limit);
}

} // namespace allox
