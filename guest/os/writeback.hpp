// SPDX-License-Identifier: Apache-2.0
// Write-back of a file that is being written, started on a thread of its
// own. An upload is synced before it is answered; kicking write-back as it
// goes leaves the final fsync only the last stretch. But the kick is not
// cheap: Btrfs checksums the data and builds its bios in the caller of
// sync_file_range, a fifth of the CPU time of writing the file. Made by the
// writer, that work delayed every next write; here it runs beside them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace allox::os {

class background_writeback {
public:
  /// Kicks write-back of `fd` (which must outlive this object) each time
  /// another `step` bytes were written.
  background_writeback(int fd, uint64_t step);
  /// Waits for the kick in progress; what it did not start, fsync will.
  ~background_writeback();

  background_writeback(const background_writeback&) = delete;
  background_writeback& operator=(const background_writeback&) = delete;

  /// The file's first `size` bytes are written. The thread starts with
  /// the first kick: a file smaller than one step never makes one.
  void written(uint64_t size);

  /// Kicks made so far (tests).
  uint64_t kicks() const;

private:
  void run();
  /// Starts write-back of what was written since the last kick; `lock`
  /// (held on entry and on return) is released meanwhile.
  void kick(std::unique_lock<std::mutex>& lock);

  const int fd_;
  const uint64_t step_;
  mutable std::mutex mtx_;
  std::condition_variable cv_;
  uint64_t written_ = 0;
  uint64_t started_ = 0;
  uint64_t kicks_ = 0;
  bool stopping_ = false;
  /// Set when no thread could be started; written() then kicks itself.
  bool inline_ = false;
  std::thread thread_;
};

} // namespace allox::os
