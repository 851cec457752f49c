// A bulk file transfer (PUT/GET /v1/files/...) between the loop thread and
// the transfer's worker thread, which does every blocking file operation
// (guest/os/workspace_transfer.hpp, workspace_tar.hpp).
//
// The channel between them is a bounded queue of chunks: an upload's body
// goes loop -> worker, a download's bytes worker -> loop. Back-pressure
// both ways: the loop stops reading the socket while the queue is full and
// reads again once the worker took a chunk; the worker blocks while a
// download's queue is full and the loop takes chunks only while the
// socket's write queue is short. The worker wakes the loop through the
// channel's own uv_async_t, which lives as long as the channel (shared by
// both threads), so a worker outliving its connection wakes nothing.
#pragma once

#include "guest/os/workspace_transfer.hpp"

#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <uv.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace allox::http {

class transfer_channel {
public:
  /// Bytes queued between the threads before the producer waits.
  static constexpr size_t capacity = 8 << 20;

  /// Opens the channel; `wake` runs on the loop thread whenever the worker
  /// made progress (coalesced), until close().
  static std::shared_ptr<transfer_channel> open(uv_loop_t* loop,
                                                std::function<void()> wake);

  // -- worker side ------------------------------------------------------------
  /// The next body chunk (os::pull_fn); blocks until one came, the body
  /// ended or the transfer was cancelled.
  expected<bool> pull(std::string& chunk);
  /// Queues a download chunk (os::push_fn); blocks while the queue is full.
  caf::error push(std::string chunk);
  /// A download's source was opened (or not): the response head can go.
  void opened(expected<json::object> head);
  /// The job ended; `result` is its reply.
  void finish(expected<json::object> result);

  // -- loop side --------------------------------------------------------------
  /// Queues an upload chunk.
  void offer(std::string chunk);
  /// The upload's body is complete.
  void end_input();
  /// True while the queue holds `capacity` bytes or more.
  bool full() const;
  /// Takes a download chunk, if one is queued.
  std::optional<std::string> take();
  /// The download's head, once opened() ran (taken once).
  std::optional<expected<json::object>> take_head();
  /// The job's result, once finish() ran.
  std::optional<expected<json::object>> result() const;
  /// Stops the worker at its next step (it cleans up after itself).
  void cancel();
  /// Cancels and closes the wake-up handle; the loop is done with it.
  void close();

private:
  transfer_channel() = default;
  void wake_loop();
  static void on_async(uv_async_t* a);

  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<std::string> chunks_;
  size_t queued_ = 0;
  bool input_done_ = false;
  bool cancelled_ = false;
  bool closed_ = false;
  std::optional<expected<json::object>> head_;
  std::optional<expected<json::object>> result_;
  uv_async_t async_{};
  std::function<void()> wake_;
  /// Keeps the channel (and its handle) alive until uv_close completes.
  std::shared_ptr<transfer_channel> self_;
};

/// The connection's state for one bulk transfer.
struct bulk_transfer {
  enum class phase { begin, running, ending };
  phase step = phase::begin;
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
  /// The session's rollback count at the start (see cmd::file_transfer).
  int64_t epoch = 0;
  /// Decodes the upload's body (Content-Length or chunked) as it comes.
  std::optional<
      boost::beast::http::request_parser<boost::beast::http::buffer_body>>
      body;
  bool body_done = false;
  /// A download's head went out; its chunks are framed (tar).
  bool head_sent = false;
  bool chunked = false;
  /// The transfer failed on the loop side: answered with this once the
  /// worker has cleaned up.
  std::optional<std::pair<int, std::string>> failure;
  /// The worker's result, kept while the session audits the transfer.
  json::object result;
  std::shared_ptr<transfer_channel> channel;
};

} // namespace allox::http
