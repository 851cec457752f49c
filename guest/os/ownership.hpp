// SPDX-License-Identifier: Apache-2.0
// Handing a tree to the sandbox user: a session's current/ and its agent's
// shared/ belong to the uid its runs execute as, so they can change what
// is theirs. New sessions start with an empty tree; a store written by
// runs as root, or a rollback to a checkpoint taken before, has a tree
// that is not; hand_over() turns it over once, when a run starts.
#pragma once

#include "messages/errors.hpp"

#include <sys/types.h>

#include <string>

namespace allox::os {

/// Whether `dir` itself is owned by uid:gid.
bool owned_by(const std::string& dir, uid_t uid, gid_t gid);

/// Makes uid:gid the owner of everything below `dir`, and of `dir` last
/// (so a tree whose top is owned is owned throughout, even after a crash
/// half-way). Never follows a symlink and never leaves the file system of
/// `dir`: entries are reached through directory fds and changed with
/// AT_SYMLINK_NOFOLLOW, so a run that swaps a directory for a symlink
/// meanwhile changes nothing outside.
caf::error hand_over(const std::string& dir, uid_t uid, gid_t gid);

/// The same for a directory already open (the fd stays the caller's).
caf::error hand_over(int dir, uid_t uid, gid_t gid);

} // namespace allox::os
