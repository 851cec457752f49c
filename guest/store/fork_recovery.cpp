#include "guest/store/fork_recovery.hpp"

#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "guest/store/create_intent.hpp"
#include "guest/store/workspace_ops.hpp"
#include "messages/json.hpp"

#include <optional>
#include <vector>

namespace allox::store {

namespace {

/// What a crash in session.fork left (actors/agent_fork.cpp), known by
/// its shape: the session directory holds only checkpoints/ and perhaps
/// .fork-current, and checkpoints/ only one intent record whose row says
/// forked_from and perhaps that checkpoint's snapshot. Anything else (a
/// session's own checkpoints, a session.create that stopped early) is not
/// a fork's leftover.
struct fork_shape {
  bool staged = false;   // .fork-current exists
  bool baseline = false; // the record's snapshot exists
};

std::optional<fork_shape>
fork_shape_of(const layout& paths, const std::string& a, const std::string& s) {
  auto top = os::list_dir(paths.session_dir(a, s));
  auto cps = os::list_dir(paths.checkpoints_dir(a, s));
  if (!top || !cps)
    return std::nullopt;
  fork_shape shape;
  for (const auto& n : *top) {
    if (n == fork_current_name)
      shape.staged = true;
    else if (n != "checkpoints")
      return std::nullopt;
  }
  auto intents = create_intents(*cps);
  if (intents.size() != 1)
    return std::nullopt;
  const auto& id = intents.front();
  for (const auto& n : *cps) {
    if (n == id)
      shape.baseline = true;
    else if (n != std::string{creating_prefix} + id)
      return std::nullopt;
  }
  auto row = read_create_intent(paths, a, s, id);
  if (!row || !row->metadata)
    return std::nullopt;
  boost::system::error_code ec;
  auto meta = json::parse(*row->metadata, ec);
  if (ec || !meta.is_object() || !meta.as_object().contains("forked_from"))
    return std::nullopt;
  return shape;
}

} // namespace

expected<fork_leftover> recover_fork(const layout& paths, const std::string& a,
                                     const std::string& s, bool has_row) {
  if (os::kind_of(paths.current(a, s)) != os::entry_kind::missing)
    return fork_leftover::none;
  auto shape = fork_shape_of(paths, a, s);
  if (!shape)
    return fork_leftover::none;
  if (shape->staged && shape->baseline) {
    if (auto err = finish_fork(paths.session_dir(a, s)))
      return err;
    return fork_leftover::completed;
  }
  if (has_row)
    return fork_leftover::none;
  if (auto err =
          remove_via_trash(paths.session_dir(a, s), paths.sessions_dir(a)))
    return err;
  return fork_leftover::aborted;
}

} // namespace allox::store
