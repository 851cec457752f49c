// SPDX-License-Identifier: Apache-2.0
// The queue between a bulk transfer's loop side and its worker thread
// (guest/http/transfer.hpp), which does every blocking file operation
// (guest/os/workspace_transfer.hpp, workspace_tar.hpp).
//
// An upload's body goes loop -> worker, a download's bytes worker -> loop.
// Back-pressure both ways: the loop stops reading the socket while the
// queue is full and reads again once the worker took a chunk; the worker
// blocks while a download's queue is full and the loop takes chunks only
// while the socket's write queue is short. The worker wakes the loop
// through the channel's own uv_async_t, which lives as long as the channel
// (shared by both threads), so a worker outliving its connection wakes
// nothing.
//
// An upload's chunks are buffers of os::transfer_chunk bytes that go round:
// the loop reads into one (reuse()), offers it with the length it filled,
// the worker writes it out, and its next pull() hands it back. The loop
// thread so never zero-fills a buffer or faults in fresh pages for one.
#pragma once

#include "guest/os/unique_fd.hpp"
#include "guest/os/workspace_transfer.hpp"

#include <uv.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace allox::http {

class transfer_channel {
public:
  /// Bytes queued between the threads before the producer waits (an
  /// upload's buffers count in full, however much of them is filled).
  static constexpr size_t capacity = 8 << 20;

  /// Opens the channel; `wake` runs on the loop thread whenever the worker
  /// made progress (coalesced), until close().
  static std::shared_ptr<transfer_channel> open(uv_loop_t* loop,
                                                std::function<void()> wake);

  // -- worker side ------------------------------------------------------------
  /// The next body bytes (os::pull_fn), valid until the next call; blocks
  /// until some came, the body ended or the transfer was cancelled. The
  /// buffer of the bytes before, written out by now, goes back to reuse().
  expected<bool> pull(std::string_view& bytes);
  /// Queues a download chunk (os::push_fn); blocks while the queue is full.
  caf::error push(std::string chunk);
  /// What the loop hands the worker of a regular file's download: the
  /// connection's socket (a descriptor of its own) and the response head,
  /// to write before the file. Nothing else writes to the socket until
  /// the job finished.
  struct handover {
    os::unique_fd socket;
    std::string head;
  };
  /// Waits for the handover; none once the transfer was cancelled.
  std::optional<handover> await_socket();
  /// The worker moved bytes to the socket itself: the loop hears of it
  /// (the transfer is not idle).
  void moved();
  /// True once the transfer was cancelled.
  bool cancelled() const;
  /// A download's source was opened (or not): the response head can go.
  void opened(expected<json::object> head);
  /// The job ended; `result` is its reply.
  void finish(expected<json::object> result);

  // -- loop side --------------------------------------------------------------
  /// A buffer of os::transfer_chunk bytes for the next upload chunk: one
  /// the worker is done with, or a new one.
  std::string reuse();
  /// Queues an upload chunk: the first `used` bytes of `buffer`.
  void offer(std::string buffer, size_t used);
  /// True while the worker has no chunk to write: the loop then hands on
  /// what it has rather than filling its buffer first.
  bool idle() const;
  /// The upload's body is complete.
  void end_input();
  /// True while the queue holds `capacity` bytes or more.
  bool full() const;
  /// Gives a regular file's download the socket (see handover).
  void hand_over(handover h);
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
  /// A queued chunk: the first `used` bytes of `buffer`.
  struct queued_chunk {
    std::string buffer;
    size_t used;
  };

  transfer_channel() = default;
  void wake_loop();
  static void on_async(uv_async_t* a);

  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<queued_chunk> chunks_;
  size_t queued_ = 0;
  /// The worker's current upload buffer (what pull() last returned).
  std::string pulled_;
  /// Upload buffers written out, for reuse().
  std::vector<std::string> spares_;
  bool input_done_ = false;
  bool cancelled_ = false;
  bool closed_ = false;
  std::optional<expected<json::object>> head_;
  std::optional<handover> handover_;
  std::optional<expected<json::object>> result_;
  uv_async_t async_{};
  std::function<void()> wake_;
  /// Keeps the channel (and its handle) alive until uv_close completes.
  std::shared_ptr<transfer_channel> self_;
};

} // namespace allox::http
