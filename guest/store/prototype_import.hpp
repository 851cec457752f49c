// SPDX-License-Identifier: Apache-2.0
// Adopting a store written by the Python prototype: its checkpoint indexes
// (.allox/indexes/<a>/<s>.json), audit logs (.allox/events/**.jsonl),
// rollback transactions (.allox/transactions/<a>/<s>.json) and share
// policies (.allox/shares/<a>/<s>.json) become catalog rows, audit records
// and journals, once, on the first start. Interrupted
// rollbacks are then recovered by the normal start-up recovery, which
// follows the prototype's rules for its phases.
#pragma once

#include "guest/store/layout.hpp"
#include "messages/errors.hpp"
#include "messages/json.hpp"
#include "messages/records.hpp"

namespace allox::store {

struct prototype_store {
  /// False when the root holds nothing of the prototype's.
  bool found = false;
  /// Rows as the catalog would hold them (sessions carry their head).
  catalog_snapshot rows;
  std::vector<audit_event> events;
  json::object summary;
};

/// Reads the prototype's metadata. Unreadable index or event files are
/// skipped with a warning; a malformed transaction is an error, because
/// guessing could lose a workspace (the prototype refuses to start too).
expected<prototype_store> read_prototype_store(const layout& paths);

} // namespace allox::store
