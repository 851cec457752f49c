// SPDX-License-Identifier: Apache-2.0
// The typed results of the store- and operator-level actions: a page of
// the audit trail (audit.list), store.initialize, debug.fault and the
// summary of start-up recovery. Their
// native JSON is written once, in messages/results/admin_json.hpp.
#pragma once

#include "messages/records.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace allox {

/// An audit record as the trail keeps it, with its place in the trail.
struct logged_audit {
  /// The record's sequence number: the cursor that resumes after it.
  int64_t cursor = 0;
  audit_event event;
};

/// audit.list: records in order, after the query's cursor.
struct audit_page {
  std::vector<logged_audit> events;
  /// The cursor of the last record returned (the query's own if none).
  int64_t next_cursor = 0;
  bool has_more = false;
};

/// store.initialize: the store is a Btrfs filesystem with its agents
/// directory. Recovery runs before the daemon serves, so a running daemon
/// names no recovered session.
struct store_initialized {
  std::string root;
  std::vector<std::string> recovered_sessions;
};

/// debug.fault: the fault is armed in the actor the request named.
struct fault_armed {};

/// What start-up recovery did (the daemon's log): sessions and agents by
/// key (`agent` or `agent/session`), and what the store holds after it.
struct recovery_summary {
  /// Sessions whose interrupted checkpoint, rollback or upload was
  /// settled.
  std::vector<std::string> recovered_sessions;
  /// On disk without a catalog row: adopted.
  std::vector<std::string> adopted_agents;
  std::vector<std::string> adopted_sessions;
  /// In the catalog without a directory: their rows removed.
  std::vector<std::string> forgotten;
  /// Deletions a crash interrupted, finished.
  std::vector<std::string> finished_deletions;
  std::vector<std::string> aborted_forks;
  std::vector<std::string> recovered_forks;
  int64_t purged_trash = 0;
  /// A store written by the prototype, adopted once: its import summary
  /// (JSON text, as its store.import audit record has it).
  caf::optional<std::string> imported;
  int64_t agents = 0;
  int64_t sessions = 0;
  int64_t checkpoints = 0;
};

} // namespace allox

// Local messages only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::audit_page)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::store_initialized)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::fault_armed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::recovery_summary)
