// SPDX-License-Identifier: Apache-2.0
// Marks of uploads in flight, so that start-up can remove what a crash
// left of them.
//
// An upload (PUT /v1/files/...) fills a temporary `.allox-upload-<hex>`
// beside its target and renames it into place; a tar upload that replaces
// a directory leaves the old tree under such a name until it is deleted.
// If the daemon dies in between, those names stay in the workspace, where
// the agent would see them. Before the transfer starts, a mark naming the
// target goes to `<session dir>/.uploads/` (outside the rollback zone);
// it is removed when the transfer ends either way. Start-up removes the
// temporary names beside the target of every mark left, then the mark:
// one small directory per session to look at, never a walk of the tree.
//
// No fsync: the mark is created before the temporary entry in the same
// file system, so a power cut that keeps the entry keeps the mark too.
// Blocking calls: run them on a worker thread.
#pragma once

#include "guest/store/layout.hpp"
#include "messages/errors.hpp"

#include <string>

namespace allox::store {

/// Directory of the marks of one session.
std::string uploads_dir(const layout& paths, const std::string& a,
                        const std::string& s);

/// Records an upload to `rel` beneath the session's current/ (`shared`
/// false) or its agent's shared/; returns the mark's path.
expected<std::string> mark_upload(const std::string& dir, bool shared,
                                  const std::string& rel);

/// Removes a mark (the upload ended); a missing one is fine.
void unmark_upload(const std::string& mark);

/// Start-up: removes the temporary entries beside the target of every
/// mark of the session, then the marks. Returns the targets cleaned.
expected<std::vector<std::string>> clean_upload_leftovers(const layout& paths,
                                                          const std::string& a,
                                                          const std::string& s);

} // namespace allox::store
