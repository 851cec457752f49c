// SPDX-License-Identifier: Apache-2.0
#include "guest/os/writeback.hpp"

#include <fcntl.h>

#include <system_error>

namespace allox::os {

background_writeback::background_writeback(int fd, uint64_t step)
    : fd_(fd), step_(step) {}

background_writeback::~background_writeback() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable())
    thread_.join();
}

void background_writeback::written(uint64_t size) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    written_ = size;
    if (written_ - started_ < step_)
      return;
  }
  if (!thread_.joinable() && !inline_) {
    try {
      thread_ = std::thread{&background_writeback::run, this};
    } catch (const std::system_error&) {
      // No thread to be had (a limit on tasks): the writer kicks itself,
      // slower but the same on disk.
      inline_ = true;
    }
  }
  if (inline_) {
    std::unique_lock<std::mutex> lock{mtx_};
    kick(lock);
    return;
  }
  cv_.notify_one();
}

uint64_t background_writeback::kicks() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return kicks_;
}

void background_writeback::run() {
  std::unique_lock<std::mutex> lock{mtx_};
  for (;;) {
    cv_.wait(lock,
             [this] { return stopping_ || written_ - started_ >= step_; });
    if (stopping_)
      return;
    kick(lock);
  }
}

void background_writeback::kick(std::unique_lock<std::mutex>& lock) {
  auto from = started_;
  auto to = written_;
  started_ = to;
  ++kicks_;
  lock.unlock();
  // Advice only: a failure leaves the range to the final fsync, which
  // reports any error that matters.
  ::sync_file_range(fd_, static_cast<off_t>(from),
                    static_cast<off_t>(to - from), SYNC_FILE_RANGE_WRITE);
  lock.lock();
}

} // namespace allox::os
