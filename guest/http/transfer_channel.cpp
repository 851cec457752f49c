// SPDX-License-Identifier: Apache-2.0
#include "guest/http/transfer_channel.hpp"

#include <utility>

namespace allox::http {

namespace {

/// Upload buffers kept for reuse beyond those queued: the worker gives one
/// back per chunk it takes, the loop takes one per chunk it fills; a few
/// cover the two running apart.
constexpr size_t max_spares = 4;

} // namespace

std::shared_ptr<transfer_channel>
transfer_channel::open(uv_loop_t* loop, std::function<void()> wake) {
  std::shared_ptr<transfer_channel> ch{new transfer_channel};
  ch->wake_ = std::move(wake);
  uv_async_init(loop, &ch->async_, on_async);
  ch->async_.data = ch.get();
  ch->self_ = ch;
  return ch;
}

void transfer_channel::on_async(uv_async_t* a) {
  auto* ch = static_cast<transfer_channel*>(a->data);
  if (!ch->closed_ && ch->wake_)
    ch->wake_();
}

// Called with mtx_ held: close() takes it too, so the handle is never
// signalled once closing started.
void transfer_channel::wake_loop() {
  if (!closed_)
    uv_async_send(&async_);
}

// -- worker side --------------------------------------------------------------

expected<bool> transfer_channel::pull(std::string_view& bytes) {
  std::unique_lock<std::mutex> lock{mtx_};
  cv_.wait(lock,
           [this] { return cancelled_ || !chunks_.empty() || input_done_; });
  if (cancelled_)
    return make_error(errc::invalid_argument, "the upload was abandoned");
  if (chunks_.empty())
    return false;
  bool was_full = queued_ >= capacity;
  if (pulled_.size() == os::transfer_chunk && spares_.size() < max_spares)
    spares_.push_back(std::move(pulled_));
  auto& next = chunks_.front();
  pulled_ = std::move(next.buffer);
  bytes = std::string_view{pulled_.data(), next.used};
  queued_ -= pulled_.size();
  chunks_.pop_front();
  // The loop stopped reading at the limit; now there is room again.
  if (was_full)
    wake_loop();
  return true;
}

caf::error transfer_channel::push(std::string chunk) {
  std::unique_lock<std::mutex> lock{mtx_};
  cv_.wait(lock, [this] { return cancelled_ || queued_ < capacity; });
  if (cancelled_)
    return make_error(errc::invalid_argument, "the client went away");
  queued_ += chunk.size();
  auto used = chunk.size();
  chunks_.push_back({std::move(chunk), used});
  if (chunks_.size() == 1)
    wake_loop();
  return caf::none;
}

std::optional<transfer_channel::handover> transfer_channel::await_socket() {
  std::unique_lock<std::mutex> lock{mtx_};
  cv_.wait(lock, [this] { return cancelled_ || handover_.has_value(); });
  if (cancelled_)
    return std::nullopt;
  return std::exchange(handover_, std::nullopt);
}

void transfer_channel::moved() {
  std::lock_guard<std::mutex> lock{mtx_};
  wake_loop();
}

bool transfer_channel::cancelled() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return cancelled_;
}

void transfer_channel::opened(expected<json::object> head) {
  std::lock_guard<std::mutex> lock{mtx_};
  head_ = std::move(head);
  wake_loop();
}

void transfer_channel::finish(expected<json::object> result) {
  std::lock_guard<std::mutex> lock{mtx_};
  result_ = std::move(result);
  wake_loop();
}

// -- loop side ----------------------------------------------------------------

std::string transfer_channel::reuse() {
  {
    std::lock_guard<std::mutex> lock{mtx_};
    if (!spares_.empty()) {
      auto buffer = std::move(spares_.back());
      spares_.pop_back();
      return buffer;
    }
  }
  return std::string(os::transfer_chunk, '\0');
}

void transfer_channel::offer(std::string buffer, size_t used) {
  std::lock_guard<std::mutex> lock{mtx_};
  queued_ += buffer.size();
  chunks_.push_back({std::move(buffer), used});
  cv_.notify_one();
}

bool transfer_channel::idle() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return chunks_.empty();
}

void transfer_channel::end_input() {
  std::lock_guard<std::mutex> lock{mtx_};
  input_done_ = true;
  cv_.notify_one();
}

bool transfer_channel::full() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return queued_ >= capacity;
}

void transfer_channel::hand_over(handover h) {
  std::lock_guard<std::mutex> lock{mtx_};
  handover_ = std::move(h);
  cv_.notify_all();
}

std::optional<std::string> transfer_channel::take() {
  std::lock_guard<std::mutex> lock{mtx_};
  if (chunks_.empty())
    return std::nullopt;
  auto chunk = std::move(chunks_.front().buffer);
  chunks_.pop_front();
  queued_ -= chunk.size();
  cv_.notify_one();
  return chunk;
}

std::optional<expected<json::object>> transfer_channel::take_head() {
  std::lock_guard<std::mutex> lock{mtx_};
  return std::exchange(head_, std::nullopt);
}

std::optional<expected<json::object>> transfer_channel::result() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return result_;
}

void transfer_channel::cancel() {
  std::lock_guard<std::mutex> lock{mtx_};
  cancelled_ = true;
  chunks_.clear();
  spares_.clear();
  queued_ = 0;
  cv_.notify_all();
}

void transfer_channel::close() {
  {
    std::lock_guard<std::mutex> lock{mtx_};
    if (closed_)
      return;
    cancelled_ = true;
    closed_ = true;
    chunks_.clear();
    spares_.clear();
    queued_ = 0;
    cv_.notify_all();
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), [](uv_handle_t* h) {
    static_cast<transfer_channel*>(h->data)->self_.reset();
  });
}

} // namespace allox::http
