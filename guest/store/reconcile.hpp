// SPDX-License-Identifier: Apache-2.0
// Start-up reconciliation of the store with the catalog, run before the
// daemon serves: finishes interrupted deletions, purges trash, adopts
// workspaces that exist on disk without rows (a crash between creating a
// subvolume and committing its row, or a store written by other tools), and
// forgets rows whose workspace is gone.
#pragma once

#include "guest/store/create_intent.hpp"
#include "guest/store/layout.hpp"
#include "messages/errors.hpp"
#include "messages/json.hpp"
#include "messages/records.hpp"
#include "messages/results/admin.hpp"
#include "messages/results/runs.hpp"

#include <map>
#include <utility>
#include <vector>

namespace allox::store {

struct reconcile_result {
  /// Catalog changes (with audit records) that make it match the disk.
  metadata_write changes;
  /// Agents and sessions that exist after reconciliation.
  std::vector<agent_row> agents;
  std::vector<session_row> sessions;
  std::vector<checkpoint_row> checkpoints;
  /// Intent records to remove once `changes` are committed.
  std::vector<intent_ref> settled_intents;
  /// What was done, for the log.
  recovery_summary summary;
  /// Runs interrupted by a restart, fencing their sessions.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>>
      fenced_runs;
  /// Live runs that outlived the daemon, adopted by their sessions.
  std::map<std::pair<std::string, std::string>, std::vector<run_row>>
      adopted_runs;
};

/// Blocking; runs on a worker thread.
expected<reconcile_result> reconcile(const layout& paths,
                                     const catalog_snapshot& rows);

} // namespace allox::store
