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

/// After the snapshot: seals the live interval as checkpoint `id`, and
/// returns its catalog row (none when no write records are taken; an
/// empty interval has one too, so that a restart tells "nothing was
/// written" from "not recorded").
caf::optional<write_set_row> seal_writes(self_ptr self, const std::string& id,
                                         uint64_t begin_ns);

/// The catalog rows of the sealed intervals of `ids` (a deletion's fold
/// changed them); ids without one are skipped.
std::vector<write_set_row> write_set_rows(self_ptr self,
                                          const std::vector<std::string>& ids);

/// At start: the sealed intervals of earlier incarnations, from the
/// catalog.
void load_write_sets(self_ptr self);

/// True when the sealed intervals are loaded; otherwise `later` runs once
/// they are.
bool writes_ready(self_ptr self, std::function<void()> later);

/// A request that names writers, held until the sealed intervals are
/// loaded and then handed to this actor again.
template <class T, class Command>
caf::result<T> after_writes_load(self_ptr self, const Command& c) {
  auto rp = self->make_response_promise<T>();
  writes_ready(self, [self, c, rp]() mutable {
    rp.delegate(caf::actor_cast<session_actor>(self), c);
  });
  return rp;
}

/// A change the daemon made itself serving `action` for `origin` (a
/// front's name): operation `op` (enum allox_write_op) on workspace path
/// `path` (relative to /workspace), or on every path beneath it when
/// `subtree`.
void note_daemon_write(self_ptr self, const std::string& action,
                       const std::string& origin, const std::string& path,
                       uint32_t op, bool subtree = false);

/// current/ was replaced (rollback): a fresh interval, in a new subvolume.
/// Returns the replaced tree's interval.
write_interval restart_writes(self_ptr self);

/// The replaced tree became checkpoint `id` (keep_pre_rollback): its
/// interval is sealed as that checkpoint's; returns the catalog row.
caf::optional<write_set_row> adopt_writes(self_ptr self, const std::string& id,
                                          write_interval replaced);

/// Everything a diff needs to name writers, copied for the worker that
/// computes the diff: the intervals between its two trees and the runs'
/// processes.
struct diff_writers;
std::shared_ptr<const diff_writers>
writers_between(self_ptr self, const std::string& from, const std::string& to,
                const caf::optional<std::string>& ancestor);

/// The same for one checkpoint's own interval (file.history).
std::shared_ptr<const diff_writers> writers_of(self_ptr self,
                                               const std::string& id);

/// Sets `writers` and `unattributed` on each change of a diff page, from
/// the trees' directories (for changes by name). On the worker.
void name_writers(const diff_writers& w, const std::string& from_dir,
                  const std::string& to_dir,
                  const std::vector<os::tree_change>& all,
                  std::vector<path_change>& page);

} // namespace allox::session_facets
