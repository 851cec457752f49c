// Start-up recovery of a session.fork that a crash interrupted
// (actors/agent_fork.cpp): a fork is either complete or absent afterwards.
//
// Blocking calls: run at start-up, before any actor touches the store.
#pragma once

#include "guest/store/layout.hpp"
#include "messages/errors.hpp"

#include <string>

namespace allox::store {

/// What recover_fork did with a session directory.
enum class fork_leftover { none, completed, aborted };

/// A session directory without current/ after a crash in session.fork:
/// with both snapshots made, only the rename to current/ was lost (it is
/// not synced, so a catalog synced later may hold the session's row too):
/// it is finished. Without a row, a fork that never got both snapshots
/// goes. Whatever is not shaped as a fork's leftover is left alone.
expected<fork_leftover> recover_fork(const layout& paths, const std::string& a,
                                     const std::string& s, bool has_row);

} // namespace allox::store
