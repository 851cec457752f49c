// Rows and batches exchanged with the METADATA actor.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
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
};

/// A session as persisted in the catalog.
struct session_row {
  std::string agent_id;
  std::string session_id;
  int64_t created_ns = 0;
  bool deleting = false;
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

/// A set of catalog changes committed atomically in one transaction.
struct metadata_write {
  std::vector<agent_row> put_agents;
  std::vector<std::string> delete_agents;
  std::vector<session_row> put_sessions;
  std::vector<session_ref> delete_sessions;
  std::vector<audit_event> audit;
};

/// Everything the daemon needs at start to re-spawn its actors.
struct catalog_snapshot {
  std::vector<agent_row> agents;
  std::vector<session_row> sessions;
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
           x.deleting);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_row& x) {
  return f(caf::meta::type_name("session_row"), x.agent_id, x.session_id,
           x.created_ns, x.deleting);
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
typename Inspector::result_type inspect(Inspector& f, metadata_write& x) {
  return f(caf::meta::type_name("metadata_write"), x.put_agents,
           x.delete_agents, x.put_sessions, x.delete_sessions, x.audit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, catalog_snapshot& x) {
  return f(caf::meta::type_name("catalog_snapshot"), x.agents, x.sessions);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, audit_query& x) {
  return f(caf::meta::type_name("audit_query"), x.agent_id, x.session_id,
           x.op, x.after, x.limit);
}

} // namespace allox
