// SPDX-License-Identifier: Apache-2.0
// The filesystem side of session-to-session sharing (share.*, reference
// 10.2): a session's files as another session may reach them, under
// stricter rules than file.*. The path (the target's scope, then the
// caller's path, both split by split_share_path in messages/share.hpp) is
// resolved beneath the workspace root with openat2 (RESOLVE_BENEATH |
// RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV, as file.* does) and
// RESOLVE_NO_SYMLINKS on top: no symlink anywhere on the way, and the
// final component opened with O_NOFOLLOW. Every directory and file must
// be on the root's device, so nothing in a nested subvolume is reached
// ("cross-filesystem sharing is not supported"). Only regular files with
// one link are read or replaced: no symlinks, no hard-linked files (their
// other names are outside the scope's say), no FIFOs or devices.
//
// Blocking: call from a worker thread (the target session's lane).
#pragma once

#include "guest/os/workspace_files.hpp"
#include "messages/share.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace allox::os {

/// share.enable: the scope must be an existing directory reachable
/// without symlinks (`scope must be an existing directory reachable
/// without symlinks`, not_found when missing), on the root's device.
caf::error share_check_scope(const workspace_root& root,
                             const std::vector<std::string>& parts);

/// share.list: the entries of directory `parts` (directory, file or
/// unsupported, with a file's size), sorted by name; more than
/// share_max_entries entries are refused.
expected<share_listing> share_list(const workspace_root& root,
                                   const std::vector<std::string>& parts);

/// share.read: the bytes of regular file `parts` (one link, at most
/// share_max_file bytes).
expected<share_content> share_read(const workspace_root& root,
                                   const std::vector<std::string>& parts);

/// share.write: replaces file `parts` (absent, or a regular file with one
/// link) with `data`: a temporary file `.allox-share-<32 hex>` beside it
/// (O_EXCL | O_NOFOLLOW, mode 0600, owned as the root), fsync,
/// `prepared()`, rename over the target, fsync of the directory. The old
/// file's metadata is not kept.
expected<share_written> share_write(const workspace_root& root,
                                    const std::vector<std::string>& parts,
                                    std::string_view data,
                                    const std::function<void()>& prepared);

} // namespace allox::os
