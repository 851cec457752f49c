// SPDX-License-Identifier: Apache-2.0
// The write_sets table of the catalog: one row per checkpoint that has a
// sealed write set (write provenance), written through the METADATA actor
// with the checkpoint rows and deleted with them. Internal to guest/store/
// (the catalog); the rest of the daemon sees write_set_row.
#pragma once

#include "messages/errors.hpp"
#include "messages/records.hpp"

struct sqlite3;

namespace allox::store {

class statement_cache;

/// Applies one batch's write-set changes inside the catalog's open
/// transaction: first the rows of the checkpoints, sessions and agents the
/// batch deletes, then the rows it puts (a deletion's fold re-writes the
/// children's sets in the same batch).
caf::error apply_write_sets(statement_cache& cache, const metadata_write& w);

/// One session's write sets.
expected<write_set_page> query_write_sets(sqlite3* db, const session_ref& s);

} // namespace allox::store
