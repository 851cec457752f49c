// SPDX-License-Identifier: Apache-2.0
#include "tracking/reader.hpp"

#include "guest/log.hpp"

#include <bpf/libbpf.h>
#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace allox::tracking {

namespace {

bool same(const decode_counters& a, const decode_counters& b) {
  return a.truncated == b.truncated && a.bad_abi == b.bad_abi &&
         a.unknown_type == b.unknown_type &&
         a.size_mismatch == b.size_mismatch &&
         a.unknown_cookie == b.unknown_cookie;
}

uv_handle_t* handle(void* h) {
  return static_cast<uv_handle_t*>(h);
}

} // namespace

/// The loop and its handles: the ring buffer map's fd, stop()/hurry(),
/// the periodic check and the waiting batch's deadline.
struct ring_reader::loop {
  uv_loop_t uv{};
  uv_poll_t ring{};
  uv_async_t wake{};
  uv_timer_t tick{};
  uv_timer_t due{};
};

ring_reader::ring_reader(bpf::process_probe& probe, batch_handler on_batch,
                         failure_handler on_failure, reader_options opts)
    : probe_(probe), on_batch_(std::move(on_batch)),
      on_failure_(std::move(on_failure)), opts_(std::move(opts)),
      decoder_([&probe](uint64_t cookie) { return probe.knows(cookie); }),
      boot_id_(read_boot_id()) {}

expected<std::unique_ptr<ring_reader>>
ring_reader::start(bpf::process_probe& probe, batch_handler on_batch,
                   failure_handler on_failure, reader_options opts) {
  if (!on_batch)
    return make_error(errc::invalid_argument, "the reader needs a batch "
                                              "handler");
  if (opts.max_batch == 0)
    opts.max_batch = 1;
  std::unique_ptr<ring_reader> r{new ring_reader(
      probe, std::move(on_batch), std::move(on_failure), std::move(opts))};
  r->ring_ = ring_buffer__new(probe.ring_fd(), &ring_reader::on_record, r.get(),
                              nullptr);
  if (r->ring_ == nullptr)
    return sys_error("create the ring buffer reader");
  // The handles are set up here and used only by the reader thread from
  // now on (uv_async_send aside, which is thread-safe).
  auto l = std::make_unique<loop>();
  if (int rc = uv_loop_init(&l->uv); rc != 0)
    return make_error(errc::internal,
                      std::string{"process event reader loop: "} +
                          uv_strerror(rc));
  if (int rc = uv_poll_init(&l->uv, &l->ring, probe.ring_fd()); rc != 0) {
    uv_loop_close(&l->uv);
    return make_error(errc::internal,
                      std::string{"watch the BPF ring buffer: "} +
                          uv_strerror(rc));
  }
  uv_async_init(&l->uv, &l->wake, [](uv_async_t* a) {
    auto* self = static_cast<ring_reader*>(a->data);
    self->guarded([self] { self->on_wake(); });
  });
  uv_timer_init(&l->uv, &l->tick);
  uv_timer_init(&l->uv, &l->due);
  for (auto* h :
       {handle(&l->ring), handle(&l->wake), handle(&l->tick), handle(&l->due)})
    h->data = r.get();
  r->loop_ = std::move(l);
  r->loop_open_ = true;
  r->running_ = true;
  r->thread_ = std::thread{[raw = r.get()] {
    raw->run();
  }};
  return r;
}

ring_reader::~ring_reader() {
  stop();
  if (ring_ != nullptr)
    ring_buffer__free(ring_);
}

void ring_reader::stop() {
  stop_ = true;
  {
    std::lock_guard<std::mutex> guard{wake_mtx_};
    if (loop_open_)
      uv_async_send(&loop_->wake);
  }
  if (thread_.joinable())
    thread_.join();
}

void ring_reader::hurry() {
  hurry_ = true;
  std::lock_guard<std::mutex> guard{wake_mtx_};
  if (loop_open_)
    uv_async_send(&loop_->wake);
}

reader_counters ring_reader::counters() const {
  std::lock_guard<std::mutex> guard{counters_mtx_};
  return counters_;
}

int ring_reader::on_record(void* ctx, void* data, size_t size) {
  auto* self = static_cast<ring_reader*>(ctx);
  self->decoder_.decode(data, size, self->pending_);
  if (self->pending_.size() >= self->opts_.max_batch) {
    try {
      self->flush(false);
    } catch (...) {
      // Stops this consume; consume() rethrows it.
      self->handler_error_ = std::current_exception();
      return -ECANCELED;
    }
  }
  return 0;
}

void ring_reader::flush(bool always) {
  reader_counters now;
  now.received = decoder_.decoded();
  now.decode_errors = decoder_.errors();
  {
    std::lock_guard<std::mutex> guard{counters_mtx_};
    now.kernel_losses = counters_.kernel_losses;
  }
  if (always) {
    if (auto losses = probe_.losses())
      now.kernel_losses = *losses;
  }
  {
    std::lock_guard<std::mutex> guard{counters_mtx_};
    counters_ = now;
  }
  bool changed = !sent_once_ || now.kernel_losses != last_sent_.kernel_losses ||
                 !same(now.decode_errors, last_sent_.decode_errors);
  if (pending_.empty() && !(always && changed))
    return;
  event_batch batch;
  batch.events.swap(pending_);
  batch.counters = now;
  batch.boot_id = boot_id_;
  last_sent_ = now;
  sent_once_ = true;
  pending_.reserve(64);
  on_batch_(std::move(batch));
}

void ring_reader::consume() {
  int n = ring_buffer__consume(ring_);
  if (handler_error_)
    std::rethrow_exception(handler_error_);
  if (n < 0)
    throw std::runtime_error(std::string{"read the BPF ring buffer: "} +
                             std::strerror(-n));
}

void ring_reader::on_readable() {
  opts_.faults.trigger("tracking.reader.poll");
  consume();
  if (pending_.empty() || batching_)
    return;
  using clock = std::chrono::steady_clock;
  auto interval = std::chrono::milliseconds{opts_.min_batch_interval_ms};
  auto now = clock::now();
  if (interval.count() == 0 || now - last_flush_ >= interval) {
    // The first events after a quiet spell go at once.
    last_flush_ = now;
    flush(true);
    return;
  }
  // The rest of the batch waits in the ring. Reading records as they come
  // would let each one wake the reader (the kernel wakes a reader that has
  // caught up: an irq_work, a self-IPI, a VM exit here); left in the ring
  // they wake nothing until a quarter of it is in use.
  batching_ = true;
  probe_.set_reader_batching(true);
  auto left = std::chrono::ceil<std::chrono::milliseconds>(last_flush_ +
                                                           interval - now);
  uv_timer_start(
      &loop_->due,
      [](uv_timer_t* t) {
        auto* self = static_cast<ring_reader*>(t->data);
        self->guarded([self] { self->finish_batch(); });
      },
      static_cast<uint64_t>(std::max<int64_t>(left.count(), 1)), 0);
}

void ring_reader::finish_batch() {
  if (batching_) {
    // Off first, then read: a record submitted after this read was
    // submitted with the kernel's own rule and wakes the reader.
    batching_ = false;
    probe_.set_reader_batching(false);
    uv_timer_stop(&loop_->due);
  }
  consume();
  if (!pending_.empty())
    last_flush_ = std::chrono::steady_clock::now();
  flush(true);
}

void ring_reader::on_tick() {
  opts_.faults.trigger("tracking.reader.poll");
  if (batching_)
    return;
  // Records left under the probe's wakeup_bytes, and the loss counters.
  finish_batch();
}

void ring_reader::on_wake() {
  if (stop_) {
    uv_stop(&loop_->uv);
    return;
  }
  if (hurry_.exchange(false))
    finish_batch();
}

void ring_reader::guarded(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    fail(std::string{"process event reader: "} + e.what());
  } catch (...) {
    fail("process event reader: unknown exception");
  }
}

void ring_reader::fail(std::string message) {
  if (!failure_)
    failure_ = make_error(errc::internal, std::move(message));
  uv_stop(&loop_->uv);
}

void ring_reader::run() {
  auto& l = *loop_;
  // The first batch (possibly empty) tells the owner the reader runs and
  // what the kernel lost before.
  guarded([this] { flush(true); });
  if (!failure_) {
    uv_poll_start(&l.ring, UV_READABLE, [](uv_poll_t* p, int status, int) {
      auto* self = static_cast<ring_reader*>(p->data);
      if (status < 0)
        self->fail(std::string{"wait on the BPF ring buffer: "} +
                   uv_strerror(status));
      else
        self->guarded([self] { self->on_readable(); });
    });
    auto every = static_cast<uint64_t>(std::max(opts_.poll_timeout_ms, 1));
    uv_timer_start(
        &l.tick,
        [](uv_timer_t* t) {
          auto* self = static_cast<ring_reader*>(t->data);
          self->guarded([self] { self->on_tick(); });
        },
        every, every);
    // stop() before this point left its wakeup pending: the loop ends at
    // once.
    uv_run(&l.uv, UV_RUN_DEFAULT);
  }
  if (!failure_) {
    // Whatever the kernel submitted before stop() still goes out.
    guarded([this] { finish_batch(); });
  }
  probe_.set_reader_batching(false);
  {
    std::lock_guard<std::mutex> guard{wake_mtx_};
    loop_open_ = false;
  }
  for (auto* h :
       {handle(&l.ring), handle(&l.wake), handle(&l.tick), handle(&l.due)})
    uv_close(h, nullptr);
  while (uv_loop_close(&l.uv) == UV_EBUSY)
    uv_run(&l.uv, UV_RUN_DEFAULT);
  running_ = false;
  if (failure_) {
    log::error("tracking", message_of(failure_));
    if (on_failure_)
      on_failure_(failure_);
  }
}

} // namespace allox::tracking
