// SPDX-License-Identifier: Apache-2.0
// The watches facet of the SESSION actor. A watch is an inotify descriptor
// (guest/os/dir_watch.hpp) the session keeps for a front: opened and read
// on the session's read lane (reading may watch a new directory tree), one
// read at a time since the lane is serial. A rollback replaces the tree a
// watch looks at, so the watch ends with it; the session's end closes all.
//
//   front: file.watch ----------> read lane: open_beneath + inotify
//          <- {watch_id}
//   front: file.watch_events ---> read lane: read (never waits), new
//          <- {changes, lost}                directories watched
//   front: file.unwatch --------> last read, descriptor closed
#include "actors/session/handlers.hpp"
#include "guest/os/dir_watch.hpp"

#include <utility>

namespace allox::session_facets {

namespace {

/// The slot of `id`, or the error that says why there is none.
expected<watch_slot> slot_of(self_ptr self, int64_t id) {
  auto& st = self->state;
  auto it = st.watches.find(id);
  if (it == st.watches.end())
    return make_error(errc::not_found, "no watch " + std::to_string(id) +
                                           " in session " + st.key());
  if (it->second.epoch != st.rollbacks) {
    st.watches.erase(it);
    return make_error(errc::not_found,
                      "watch " + std::to_string(id) +
                          " ended: the session was rolled back");
  }
  return it->second;
}

/// Reads `slot`'s changes on the read lane.
caf::result<watch_changes> read_changes(self_ptr self, int64_t id,
                                        watch_slot slot) {
  auto rp = self->make_response_promise<watch_changes>();
  read_step<watch_changes>(
      self,
      [id, slot]() -> expected<watch_changes> {
        auto root = os::workspace_root::open(slot.root);
        if (!root)
          return root.error();
        watch_changes out;
        out.watch_id = id;
        auto changes = slot.watch->read(*root, out.lost);
        if (!changes)
          return changes.error();
        out.changes = std::move(*changes);
        return out;
      },
      [rp](watch_changes& v) mutable { rp.deliver(std::move(v)); },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

} // namespace

caf::result<watch_opened> handle(self_ptr self, const cmd::file_watch& c) {
  if (auto err = require_alive(self))
    return err;
  auto& st = self->state;
  if (st.watches.size() >= cmd::max_watches)
    return conflict("session " + st.key() + " holds " +
                    std::to_string(cmd::max_watches) +
                    " watches already: end one first");
  auto rel = os::clean_path(c.path);
  if (!rel)
    return rel.error();
  auto root = st.init.paths.current(st.agent_id(), st.session_id());
  auto rp = self->make_response_promise<watch_opened>();
  read_step<watch_slot>(
      self,
      [root, rel = *rel, recursive = c.recursive]() -> expected<watch_slot> {
        auto r = os::workspace_root::open(root);
        if (!r)
          return r.error();
        auto w = os::dir_watch::open(*r, rel, recursive);
        if (!w)
          return w.error();
        return watch_slot{std::make_shared<os::dir_watch>(std::move(*w)), root,
                          0};
      },
      [self, rp, shown = *rel](watch_slot& slot) mutable {
        auto& state = self->state;
        slot.epoch = state.rollbacks;
        auto id = state.next_watch++;
        state.watches.emplace(id, std::move(slot));
        rp.deliver(watch_opened{id, shown});
      },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::result<watch_changes> handle(self_ptr self,
                                  const cmd::file_watch_events& c) {
  auto slot = slot_of(self, c.watch_id);
  if (!slot)
    return slot.error();
  return read_changes(self, c.watch_id, std::move(*slot));
}

caf::result<watch_changes> handle(self_ptr self, const cmd::file_unwatch& c) {
  auto slot = slot_of(self, c.watch_id);
  if (!slot)
    return slot.error();
  // The slot's copy keeps the descriptor for the last read; it closes when
  // that read is done.
  self->state.watches.erase(c.watch_id);
  return read_changes(self, c.watch_id, std::move(*slot));
}

} // namespace allox::session_facets
