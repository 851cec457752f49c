// The METADATA actor: sole owner of the SQLite catalog. It runs detached
// (own thread) because commits fsync, and it commits every batch queued
// while it was busy in one transaction (group commit), so many sessions
// mutating at once pay for one fsync instead of one each.
#pragma once

#include "guest/histogram.hpp"
#include "guest/store/catalog.hpp"
#include "messages/actors.hpp"

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
  /// How long each commit (one transaction) took, for /metrics.
  latency_histogram commit_seconds;
  std::chrono::steady_clock::time_point started;
};

metadata_actor::behavior_type
metadata(metadata_actor::stateful_pointer<metadata_state> self,
         std::shared_ptr<store::catalog> db, std::string path);

} // namespace allox
