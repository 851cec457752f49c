#include "guest/tracking/reader.hpp"

#include "guest/log.hpp"

#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace allox::tracking {

namespace {

/// How long records may stay unread while a batch waits: a 256 KiB ring
/// holds about 1,400 of them, so a burst may reach 700,000 events/s.
constexpr std::chrono::milliseconds max_unread{2};

bool same(const decode_counters& a, const decode_counters& b) {
  return a.truncated == b.truncated && a.bad_abi == b.bad_abi &&
         a.unknown_type == b.unknown_type &&
         a.size_mismatch == b.size_mismatch &&
         a.unknown_cookie == b.unknown_cookie;
}

} // namespace

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
  {
    std::lock_guard<std::mutex> guard{wake_mtx_};
    stop_ = true;
  }
  wake_cv_.notify_one();
  if (thread_.joinable())
    thread_.join();
}

void ring_reader::hurry() {
  {
    std::lock_guard<std::mutex> guard{wake_mtx_};
    hurry_ = true;
  }
  wake_cv_.notify_one();
}

bool ring_reader::wait_for_batch(std::chrono::steady_clock::time_point due) {
  std::unique_lock<std::mutex> lock{wake_mtx_};
  wake_cv_.wait_until(lock, due, [this] { return hurry_ || stop_.load(); });
  bool hurried = hurry_;
  hurry_ = false;
  return hurried;
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
      // Stops this poll; run() reports it.
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

void ring_reader::run() {
  caf::error failure;
  try {
    // The first batch (possibly empty) tells the owner the reader runs and
    // what the kernel lost before.
    flush(true);
    using clock = std::chrono::steady_clock;
    const auto interval =
        std::chrono::milliseconds{opts_.min_batch_interval_ms};
    auto last_flush = clock::now();
    while (!stop_) {
      opts_.faults.trigger("tracking.reader.poll");
      int n = 0;
      bool hurried = false;
      if (!pending_.empty()) {
        // Events wait for their batch. Sleep rather than poll until it is
        // due: the kernel wakes the reader only for a record submitted
        // while the reader had read everything, so records left in the
        // ring meanwhile cost no wakeup (an irq_work, a self-IPI: a VM
        // exit here) and no pass through this loop each.
        // In slices, reading what came meanwhile into the batch: the ring
        // then only has to hold a slice's worth of records, not a batch's.
        hurried = wait_for_batch(
            std::min(last_flush + interval, clock::now() + max_unread));
        n = ring_buffer__consume(ring_);
      } else {
        n = ring_buffer__poll(ring_, opts_.poll_timeout_ms);
        // Records the kernel did not wake us for (wakeup_bytes) wait here.
        if (n >= 0 && !handler_error_)
          n = ring_buffer__consume(ring_);
      }
      if (handler_error_)
        std::rethrow_exception(handler_error_);
      if (n < 0 && n != -EINTR) {
        failure = make_error(errc::internal,
                             std::string{"poll the BPF ring buffer: "} +
                                 std::strerror(-n));
        break;
      }
      auto now = clock::now();
      if (pending_.empty() || hurried || now - last_flush >= interval) {
        if (!pending_.empty())
          last_flush = now;
        flush(true);
      }
    }
    if (!failure) {
      // Whatever the kernel submitted before stop() still goes out.
      (void)ring_buffer__consume(ring_);
      if (handler_error_)
        std::rethrow_exception(handler_error_);
      flush(true);
    }
  } catch (const std::exception& e) {
    failure = make_error(errc::internal,
                         std::string{"process event reader: "} + e.what());
  } catch (...) {
    failure = make_error(errc::internal, "process event reader: unknown "
                                         "exception");
  }
  running_ = false;
  if (failure) {
    log::error("tracking", message_of(failure));
    if (on_failure_)
      on_failure_(failure);
  }
}

} // namespace allox::tracking
