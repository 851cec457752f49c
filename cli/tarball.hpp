// SPDX-License-Identifier: Apache-2.0
// Directories as tar files on the client side of bulk transfer: a local
// tree packed for one `PUT /v1/files/...` and a downloaded tar stream
// unpacked, both with libarchive. A tree then costs one request instead
// of one file.write or file.read per file (and per MiB).
#pragma once

#include "cli/result.hpp"

#include <string>
#include <vector>

namespace allox::ctl {

/// Packs the tree under `dir` (its content, names relative to it) into
/// the tar file `tar`: regular files, directories and symlinks (as links;
/// other kinds are skipped). Returns the regular files' relative paths.
result<std::vector<std::string>> pack_tree(const std::string& dir,
                                           const std::string& tar);

/// Unpacks the tar file `tar` into `dir` (created when missing), never
/// writing outside it: names with `..` or absolute ones and links that
/// would lead out are refused, ownership is not restored. Returns the
/// regular files written, as paths below `dir`.
result<std::vector<std::string>> unpack_tree(const std::string& tar,
                                             const std::string& dir);

} // namespace allox::ctl
