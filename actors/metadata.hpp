// SPDX-License-Identifier: Apache-2.0
// The METADATA actor: sole owner of the SQLite catalog. It runs detached
// (own thread) because commits fsync, and it commits every batch queued
// while it was busy in one transaction (group commit), so many sessions
// mutating at once pay for one fsync instead of one each.
#pragma once

#include "guest/histogram.hpp"
#include "guest/store/catalog.hpp"
#include "messages/actors.hpp"

#include <caf/actor_clock.hpp>
#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <memory>
#include <vector>

namespace allox {

struct metadata_state {
  static inline const char* name = "metadata";

  std::shared_ptr<store::catalog> db;
  std::string path;
  std::vector<metadata_write> queued;
  std::vector<caf::typed_response_promise<caf::ok_atom>> waiting;
  bool flush_pending = false;
  uint64_t commits = 0;
  uint64_t batches = 0;
  uint64_t failures = 0;
  uint64_t run_queries = 0;
  uint64_t wal_checkpoints = 0;
  /// When the last transaction committed (the actor clock's time).
  caf::actor_clock::time_point last_commit{};
  /// A tick is on its way to checkpoint the log once the catalog is idle.
  bool checkpoint_armed = false;
  /// Log pages a checkpoint could not copy (a reader of an older state
  /// held them): the thresholds count from here, so such a reader does not
  /// turn every commit into a checkpoint.
  int wal_floor = 0;
  /// How long each commit (one transaction) took, for /metrics.
  latency_histogram commit_seconds;
  std::chrono::steady_clock::time_point started;
};

/// Log pages past which the catalog is checkpointed once idle: SQLite's
/// own threshold, met every hundred or so checkpoints of a session.
inline constexpr int wal_idle_pages = 1000;
/// Log pages past which it is checkpointed right after the commit, idle or
/// not: 16 MiB of log under a load that never pauses.
inline constexpr int wal_max_pages = 4096;
/// How long no transaction must have committed before an idle checkpoint.
inline constexpr std::chrono::milliseconds wal_idle{500};

metadata_actor::behavior_type
metadata(metadata_actor::stateful_pointer<metadata_state> self,
         std::shared_ptr<store::catalog> db, std::string path);

} // namespace allox
