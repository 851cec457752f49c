// SPDX-License-Identifier: Apache-2.0
// The catalog's schema history: one SQL script per version step,
// applied in order by catalog::migrate (catalog.cpp).
#pragma once

#include <cstddef>

namespace allox::store {

/// Entry i moves the schema from version i to i + 1.
extern const char* const migration_steps[];
/// How many there are: the latest schema version.
extern const size_t migration_count;

} // namespace allox::store
