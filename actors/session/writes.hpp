// SPDX-License-Identifier: Apache-2.0
// The writes facet of the SESSION actor: write provenance (writes.cpp).
// The TRACKER hands the session the write records of its runs; the session
// keeps them per interval between checkpoints (actors/session/write_sets.hpp)
// and names the writers of each change of a checkpoint.diff. Internal to
// actors/session/.
#pragma once

#include "actors/session/facets.hpp"
#include "guest/os/btrfs_diff.hpp"

#include <memory>

namespace allox::session_facets {

// -- write provenance (writes.cpp) --------------------------------------------

/// Write records of this session's runs: into the live interval (or the
/// last sealed one, for what happened before its snapshot).
void on_write_batch(self_ptr self, const write_record_batch& b);

/// Before a checkpoint's snapshot: the TRACKER starts a new write
/// generation, so that the next interval records every writer again.
/// Returns the cut's start (CLOCK_BOOTTIME ns).
uint64_t begin_write_cut(self_ptr self);

/// After the snapshot: seals the live interval as checkpoint `id`.
void seal_writes(self_ptr self, const std::string& id, uint64_t begin_ns);

/// current/ was replaced (rollback): a fresh interval, in a new subvolume.
void restart_writes(self_ptr self);

/// Everything a diff needs to name writers, copied for the worker that
/// computes the diff: the intervals between its two trees and the runs'
/// processes.
struct diff_writers;
std::shared_ptr<const diff_writers>
writers_between(self_ptr self, const std::string& from, const std::string& to,
                const caf::optional<std::string>& ancestor);

/// Sets `writers` and `unattributed` on each change of a diff page, from
/// the trees' directories (for changes by name). On the worker.
void name_writers(const diff_writers& w, const std::string& from_dir,
                  const std::string& to_dir,
                  const std::vector<os::tree_change>& all,
                  std::vector<path_change>& page);

} // namespace allox::session_facets
