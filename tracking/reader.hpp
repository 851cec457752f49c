// SPDX-License-Identifier: Apache-2.0
// The ring reader: one thread running a libuv loop that waits on the
// probe's ring buffer, decodes the records and hands them over in batches.
// CAF-free: the owner decides where batches go (an actor integration
// forwards them as messages).
#pragma once

#include "bpf/loader.hpp"
#include "guest/faults.hpp"
#include "tracking/decode.hpp"
#include "tracking/events.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

struct ring_buffer; // libbpf

namespace allox::tracking {

struct reader_options {
  /// How long one wait for the first record of a batch lasts: bounds the
  /// latency of a record under the probe's wakeup_bytes, and how often an
  /// idle reader checks the kernel's loss counters.
  int poll_timeout_ms = 20;
  /// A batch is handed over at this many events, or when a poll returns.
  size_t max_batch = 4096;
  /// 0: every poll that returned events hands them over. Otherwise events
  /// that arrive within this long of the last batch wait (up to
  /// max_batch) and go together: a burst costs the owner one message per
  /// interval instead of one per kernel wakeup, and an event after a quiet
  /// spell still goes at once. While a batch waits its records stay in the
  /// ring, and the probe wakes the reader early only when a quarter of
  /// the ring is in use (process_probe::set_reader_batching).
  int min_batch_interval_ms = 0;
  /// Fault point "tracking.reader.poll", fired on the reader thread when
  /// the kernel wakes it and at every tick, before it reads the ring:
  /// `throw` ends the reader as a failed read would, `delay` stalls it (the
  /// ring fills up).
  fault_set faults;
};

/// Reads a process_probe's ring buffer on its own thread.
class ring_reader {
public:
  /// Called on the reader thread for every batch: with events, or with
  /// none when only the counters changed (a kernel loss, a refused
  /// record). Must not block for long: the ring fills meanwhile.
  using batch_handler = std::function<void(event_batch)>;
  /// Called once, on the reader thread, when the reader stops on an error
  /// (poll failed, a handler threw, an injected fault). Not on stop().
  using failure_handler = std::function<void(const caf::error&)>;

  /// Starts the thread. `probe` must outlive the reader.
  static expected<std::unique_ptr<ring_reader>>
  start(bpf::process_probe& probe, batch_handler on_batch,
        failure_handler on_failure, reader_options opts = {});

  ring_reader(const ring_reader&) = delete;
  ring_reader& operator=(const ring_reader&) = delete;
  /// Stops and joins.
  ~ring_reader();

  /// Sets the stop flag and joins the thread; records already in the ring
  /// are consumed and handed over first. Idempotent.
  void stop();

  /// Hands the events waiting for their batch over now instead of when
  /// the batch is due (a run's drain waits for them). Any thread.
  void hurry();

  /// A snapshot of the counters.
  reader_counters counters() const;

  /// False once the thread has ended (stopped or failed).
  bool running() const { return running_.load(); }

private:
  ring_reader(bpf::process_probe& probe, batch_handler on_batch,
              failure_handler on_failure, reader_options opts);

  static int on_record(void* ctx, void* data, size_t size);
  void run();
  /// Reads every record in the ring into the pending batch.
  void consume();
  /// The kernel woke the reader: read the ring, and hand the batch over
  /// or let it wait for its interval.
  void on_readable();
  /// The periodic check: fault point, records under wakeup_bytes, the
  /// kernel's loss counters.
  void on_tick();
  /// stop() or hurry() asked for attention.
  void on_wake();
  /// Ends a waiting batch: the kernel goes back to waking the reader as
  /// soon as a record comes, the rest of the ring is read, and the batch
  /// handed over.
  void finish_batch();
  /// Runs a callback's work; an exception ends the loop as a failure.
  void guarded(const std::function<void()>& fn);
  /// Ends the loop with this failure (the first one counts).
  void fail(std::string message);
  /// Hands the pending events over if there are any, or if `always` and
  /// the counters changed since the last batch.
  void flush(bool always);

  bpf::process_probe& probe_;
  batch_handler on_batch_;
  failure_handler on_failure_;
  reader_options opts_;
  ring_buffer* ring_ = nullptr;
  record_decoder decoder_;
  std::string boot_id_;
  std::vector<process_event> pending_;
  reader_counters last_sent_;
  bool sent_once_ = false;
  mutable std::mutex counters_mtx_;
  reader_counters counters_;
  std::exception_ptr handler_error_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> hurry_{false};
  /// The reader thread's libuv loop and handles (reader.cpp).
  struct loop;
  std::unique_ptr<loop> loop_;
  /// Guards uv_async_send against the loop's end.
  std::mutex wake_mtx_;
  bool loop_open_ = false; // guarded by wake_mtx_
  /// A batch waits (its records partly in the ring) until its timer.
  bool batching_ = false;
  std::chrono::steady_clock::time_point last_flush_;
  caf::error failure_;
  std::atomic<bool> running_{false};
  std::thread thread_;
};

} // namespace allox::tracking
