// SPDX-License-Identifier: Apache-2.0
// A bulk transfer's worker: the blocking half of a front's streamed route
// (transfer_plan; PUT/GET /v1/files/... among them), on a thread of its
// own.
// It opens the workspace, moves the bytes through its transfer_channel and
// reports the result there; the loop side is transfer.cpp.
#pragma once

#include "guest/http/transfer_channel.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace allox::http {

struct transfer_job {
  bool upload = false;
  /// A directory as a tar stream (PUT of application/x-tar, GET of one).
  bool tar = false;
  /// The session's answer to the begin: the tree and the path beneath it
  /// (for a form upload, the directory its parts go beneath).
  std::string root;
  std::string rel;
  uint64_t max_bytes = 0;
  /// Where an upload marks itself for start-up to clean up after a crash
  /// (guest/store/upload_marks.hpp), and whether root is the agent's
  /// shared tree.
  std::string marks;
  bool shared = false;
  // -- from the front's transfer_plan -----------------------------------------
  /// Answers name the files written ({files: [{path, size}]}).
  bool name_files = false;
  /// A directory downloads as a tar stream (else it is refused).
  bool directories = false;
  bool gunzip = false;
  bool gzip = false;
  bool make_parents = false;
  std::string form_boundary;
  std::function<expected<std::string>(std::string_view)> part_path;
};

/// Starts the worker; it reports through `ch` (opened, push, finish).
void run_transfer_job(std::shared_ptr<transfer_channel> ch, transfer_job job);

} // namespace allox::http
