// SPDX-License-Identifier: Apache-2.0
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

/// A session directory as a crash in session.fork may leave it. With
/// current/ and the fork's mark the caller may have been answered: a
/// missing baseline (made after the reply) is taken from the checkpoint
/// forked from, and the mark goes. An earlier release's .fork-current
/// beside its baseline is renamed to current/ (it answered once both
/// existed; the rename is not synced, so a catalog synced later may hold
/// the session's row too). Without current/ and without a row the fork
/// goes. Whatever is not shaped as a fork's leftover is left alone.
expected<fork_leftover> recover_fork(const layout& paths, const std::string& a,
                                     const std::string& s, bool has_row);

} // namespace allox::store
