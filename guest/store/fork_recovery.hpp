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

/// A session directory as a crash in session.fork may leave it: once its
/// current/ was made the caller may have been answered, so the fork is
/// finished: its baseline (made after the reply) is taken from the
/// checkpoint forked from (and an earlier release's staged .fork-current
/// renamed to current/).
/// Without current/ and without a row the fork goes. Whatever is not
/// shaped as a fork's leftover is left alone.
expected<fork_leftover> recover_fork(const layout& paths, const std::string& a,
                                     const std::string& s, bool has_row);

} // namespace allox::store
