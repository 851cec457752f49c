// SPDX-License-Identifier: Apache-2.0
// A bulk file transfer (a front's streamed route, PUT/GET /v1/files/...
// among them): the connection's state while its worker thread
// (transfer_job.hpp) moves the bytes.
#pragma once

#include "guest/http/routes.hpp"
#include "guest/http/transfer_channel.hpp"

#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace allox::http {

/// The connection's state for one bulk transfer.
struct bulk_transfer {
  /// planning: a streamed route's front decides (responder::begin);
  /// begin: the session does.
  enum class phase { planning, begin, running, ending };
  phase step = phase::begin;
  /// The front's plan: how the bytes are coded, and how it answers (set
  /// once the front planned).
  std::shared_ptr<const transfer_plan> plan;
  bool upload = false;
  bool tar = false;
  /// The client asked to hear `100 Continue` before sending the body.
  bool expect_continue = false;
  std::string agent_id, session_id, path;
  /// agent/session: its uploads in flight count against a limit.
  std::string session_key;
  /// Bytes counted against that limit so far.
  uint64_t charged = 0;
  /// Body bytes received, or response body bytes sent.
  uint64_t bytes = 0;
  /// Tar entries, for the audit.
  int64_t entries = 0;
  /// The session's rollback count at the start (see cmd::file_transfer_end).
  int64_t epoch = 0;
  /// Decodes the upload's body (Content-Length or chunked) as it comes.
  std::optional<
      boost::beast::http::request_parser<boost::beast::http::buffer_body>>
      body;
  bool body_done = false;
  /// Body bytes not yet received of a declared length (none: chunked).
  /// Such a body is the next bytes of the stream as they are: the socket
  /// reads them straight into `lent` (connection::lend_upload_buffer).
  std::optional<uint64_t> remaining;
  /// The buffer the body is gathered in, from transfer_channel::reuse();
  /// its first `filled` bytes hold body bytes not yet queued.
  std::string lent;
  size_t filled = 0;
  /// A download's head went out; its chunks are framed (tar, gzip).
  bool head_sent = false;
  /// A regular file's download: the worker writes to the socket itself.
  bool handed_over = false;
  bool chunked = false;
  /// The transfer failed on the loop side: answered with this once the
  /// worker has cleaned up.
  caf::error failure;
  /// The worker's result, kept while the session audits the transfer.
  json::object result;
  std::shared_ptr<transfer_channel> channel;
};

} // namespace allox::http
