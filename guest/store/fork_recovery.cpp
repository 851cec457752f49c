// SPDX-License-Identifier: Apache-2.0
#include "guest/store/fork_recovery.hpp"

#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "guest/store/create_intent.hpp"
#include "guest/store/workspace_ops.hpp"
#include "messages/ids.hpp"
#include "messages/json.hpp"

#include <optional>
#include <vector>

namespace allox::store {

namespace {

/// What a crash in session.fork left (actors/agent_fork.cpp), known by
/// its shape: the session directory holds checkpoints/ and at most one of
/// .fork-current (earlier releases) and current/, perhaps the fork's mark
/// and an upload's marks; checkpoints/ holds only one intent record whose
/// row says forked_from, and perhaps that checkpoint's snapshot. Anything
/// else (a session's own checkpoints, a session.create that stopped
/// early) is not a fork's leftover.
struct fork_shape {
  bool staged = false;   // .fork-current exists (earlier releases)
  bool current = false;  // current/ exists
  bool pending = false;  // the fork's mark exists
  bool baseline = false; // the record's snapshot exists
  std::string baseline_id;
  /// The checkpoint forked from, as the record names it.
  std::string source_session, source_checkpoint;
};

std::optional<fork_shape>
fork_shape_of(const layout& paths, const std::string& a, const std::string& s) {
  auto top = os::list_dir(paths.session_dir(a, s));
  if (!top)
    return std::nullopt;
  fork_shape shape;
  for (const auto& n : *top) {
    if (n == fork_current_name)
      shape.staged = true;
    else if (n == "current")
      shape.current = true;
    else if (n == fork_pending_name)
      shape.pending = true;
    else if (n != "checkpoints" && n != upload_marks_name)
      return std::nullopt;
  }
  // With current/, only the fork's mark says the baseline is still to
  // come (metadata naming forked_from is anyone's to write); every live
  // session stops here, before its checkpoints are listed.
  if ((shape.current && !shape.pending) || (shape.staged && shape.current))
    return std::nullopt;
  auto cps = os::list_dir(paths.checkpoints_dir(a, s));
  if (!cps)
    return std::nullopt;
  auto intents = create_intents(*cps);
  if (intents.size() != 1)
    return std::nullopt;
  shape.baseline_id = intents.front();
  for (const auto& n : *cps) {
    if (n == shape.baseline_id)
      shape.baseline = true;
    else if (n != std::string{creating_prefix} + shape.baseline_id)
      return std::nullopt;
  }
  auto row = read_create_intent(paths, a, s, shape.baseline_id);
  if (!row || !row->metadata)
    return std::nullopt;
  boost::system::error_code ec;
  auto meta = json::parse(*row->metadata, ec);
  if (ec || !meta.is_object())
    return std::nullopt;
  auto* from = meta.as_object().if_contains("forked_from");
  if (from == nullptr || !from->is_object())
    return std::nullopt;
  if (auto* v = from->as_object().if_contains("session_id");
      v && v->is_string())
    shape.source_session = std::string{v->as_string()};
  if (auto* v = from->as_object().if_contains("checkpoint_id");
      v && v->is_string())
    shape.source_checkpoint = std::string{v->as_string()};
  return shape;
}

/// The baseline a crash kept from being made, from the checkpoint forked
/// from; should that be gone, from the fork's own current/ (the caller
/// may have been answered: its session is kept).
caf::error make_baseline(const layout& paths, const std::string& a,
                         const std::string& s, const fork_shape& shape) {
  auto target = paths.checkpoint(a, s, shape.baseline_id);
  if (is_valid_id(shape.source_session) &&
      is_valid_id(shape.source_checkpoint)) {
    auto source =
        paths.checkpoint(a, shape.source_session, shape.source_checkpoint);
    if (os::kind_of(source) == os::entry_kind::directory)
      return os::create_snapshot(source, target, true);
  }
  log::warn("reconcile", "fork " + session_key(a, s) +
                             ": the checkpoint it came from is gone; its "
                             "baseline is taken from its own current/");
  return os::create_snapshot(paths.current(a, s), target, true);
}

} // namespace

expected<fork_leftover> recover_fork(const layout& paths, const std::string& a,
                                     const std::string& s, bool has_row) {
  auto shape = fork_shape_of(paths, a, s);
  if (!shape)
    return fork_leftover::none;
  auto dir = paths.session_dir(a, s);
  if (shape->current) {
    bool made = !shape->baseline;
    if (made)
      if (auto err = make_baseline(paths, a, s, *shape))
        return err;
    settle_fork(dir);
    return made ? fork_leftover::completed : fork_leftover::none;
  }
  if (shape->staged && shape->baseline) {
    // Earlier releases answered once both snapshots existed: only the
    // rename (not synced) was lost.
    if (auto err = finish_fork(dir))
      return err;
    return fork_leftover::completed;
  }
  // No current/: the fork was never answered.
  if (has_row)
    return fork_leftover::none;
  if (auto err = remove_via_trash(dir, paths.sessions_dir(a)))
    return err;
  return fork_leftover::aborted;
}

} // namespace allox::store
