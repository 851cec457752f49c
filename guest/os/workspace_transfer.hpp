// SPDX-License-Identifier: Apache-2.0
// Bulk transfer of a session's files (PUT and GET /v1/files/...): one
// regular file as a byte stream, or a directory as a tar stream
// (guest/os/workspace_tar.hpp). The bytes come from, or go to, the HTTP
// connection through pull/push callbacks, so nothing here holds more than
// one chunk of a file in memory. Paths are resolved beneath the workspace
// exactly as for file.* (guest/os/workspace_files.hpp).
//
// Blocking: call from the transfer's own worker thread.
#pragma once

#include "guest/os/workspace_files.hpp"
#include "messages/json.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace allox::os {

/// Bytes read or written per step.
inline constexpr size_t transfer_chunk = 1 << 20;

/// The next bytes of a request body into `bytes`, valid until the next
/// call: true with some, false at the end of the body; an error when the
/// transfer was abandoned.
using pull_fn = std::function<expected<bool>(std::string_view& bytes)>;

/// Hands one chunk of a response body on (blocking while the client is
/// behind); an error when the transfer was abandoned.
using push_fn = std::function<caf::error(std::string chunk)>;

/// Prefix of the temporary names uploads use beside their target.
inline constexpr std::string_view upload_temp_prefix = ".allox-upload-";

/// Replaces regular file `rel` with the body (temp file beside it, fsync,
/// rename, fsync the directory: a crash leaves the old file or the new
/// one). The parent must exist; a directory at `rel` is refused. An
/// existing file keeps its mode, a new one gets 0644. {path, size}.
expected<json::object> receive_file(const workspace_root& root,
                                    const std::string& rel, pull_fn pull);

/// What GET finds at a path: a regular file (with its size) or a directory.
struct download_source {
  bool directory = false;
  uint64_t size = 0;
  unique_fd fd;
};

/// Opens `rel` beneath the root for a download; FIFOs, devices and
/// sockets are refused (never opened for reading).
expected<download_source> open_download(const workspace_root& root,
                                        const std::string& rel);

/// Writes `head`, then the first `size` bytes of the regular file at `fd`,
/// to the connected, non-blocking socket `sock`. sendfile(2) hands the
/// file's pages to the socket: nothing is copied through user space.
/// While the peer is behind it waits in poll(2), asking `going()` four
/// times a second (false: stop); `moved()` whenever the peer took bytes. The file
/// shrinking meanwhile is an error (the head announced its length).
caf::error send_file(int fd, uint64_t size, int sock, std::string_view head,
                     const std::function<bool()>& going,
                     const std::function<void()>& moved);

} // namespace allox::os
