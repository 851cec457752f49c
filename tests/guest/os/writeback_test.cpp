// SPDX-License-Identifier: Apache-2.0
#include "guest/os/writeback.hpp"

#include "guest/os/unique_fd.hpp"
#include "tests/fixtures/temp_dir.hpp"
#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

using namespace allox;

namespace {

constexpr uint64_t step = 4 << 20;

/// Pages of `fd` in the page cache that are dirty and not yet under
/// write-back, by cachestat(2) (Linux 6.5; glibc has no wrapper yet).
uint64_t dirty_pages(int fd) {
  struct {
    uint64_t off, len;
  } range{0, 0}; // 0 length: to the end of the file
  struct {
    uint64_t cache, dirty, writeback, evicted, recently_evicted;
  } stat{};
  REQUIRE_MESSAGE(::syscall(451, fd, &range, &stat, 0) == 0,
                  "cachestat: ", std::strerror(errno));
  return stat.dirty;
}

/// A new file in a scratch directory, written a MiB at a time.
struct scratch_file {
  test::temp_dir dir;
  os::unique_fd fd{::open((dir / "f").c_str(), O_WRONLY | O_CREAT, 0644)};
  uint64_t size = 0;

  /// Appends `bytes`, telling `writeback` after each MiB.
  void write_mib(uint64_t bytes, os::background_writeback& writeback) {
    REQUIRE(fd);
    std::string mib(1 << 20, 'x');
    for (uint64_t done = 0; done < bytes; done += mib.size()) {
      REQUIRE(::write(fd.get(), mib.data(), mib.size()) ==
              static_cast<ssize_t>(mib.size()));
      size += mib.size();
      writeback.written(size);
    }
  }
};

} // namespace

TEST_CASE("writeback: a file below one step is left to fsync, without a "
          "thread or a kick") {
  scratch_file file;
  {
    os::background_writeback writeback{file.fd.get(), step};
    file.write_mib(step - (1 << 20), writeback);
    CHECK(writeback.kicks() == 0);
  }
  // Nothing started: all of it is still dirty.
  CHECK(dirty_pages(file.fd.get()) == file.size / 4096);
}

TEST_CASE("writeback: each step written is handed to the disk while the "
          "writer goes on") {
  scratch_file file;
  os::background_writeback writeback{file.fd.get(), step};
  file.write_mib(4 * step, writeback);
  // The kicks run on their own thread, each to where the writer had got:
  // all but the last stretch of less than a step is handed over.
  CHECK(test::eventually(
      [&]() -> bool { return dirty_pages(file.fd.get()) < step / 4096; }));
  CHECK(writeback.kicks() >= 1);
  CHECK(writeback.kicks() <= 4);
}
