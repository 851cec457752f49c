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

/// Appends `bytes` of data to `fd`, telling `writeback` after each MiB.
void write_mib(int fd, uint64_t bytes, os::background_writeback& writeback,
               uint64_t& size) {
  std::string mib(1 << 20, 'x');
  for (uint64_t done = 0; done < bytes; done += mib.size()) {
    REQUIRE(::write(fd, mib.data(), mib.size()) ==
            static_cast<ssize_t>(mib.size()));
    size += mib.size();
    writeback.written(size);
  }
}

} // namespace

TEST_CASE("writeback: a file below one step is left to fsync, without a "
          "thread or a kick") {
  test::temp_dir dir;
  os::unique_fd fd{::open((dir / "f").c_str(), O_WRONLY | O_CREAT, 0644)};
  REQUIRE(fd);
  uint64_t size = 0;
  {
    os::background_writeback writeback{fd.get(), step};
    write_mib(fd.get(), step - (1 << 20), writeback, size);
    CHECK(writeback.kicks() == 0);
  }
  // Nothing started: all of it is still dirty.
  CHECK(dirty_pages(fd.get()) == size / 4096);
}

TEST_CASE("writeback: each step written is handed to the disk while the "
          "writer goes on") {
  test::temp_dir dir;
  os::unique_fd fd{::open((dir / "f").c_str(), O_WRONLY | O_CREAT, 0644)};
  REQUIRE(fd);
  uint64_t size = 0;
  os::background_writeback writeback{fd.get(), step};
  write_mib(fd.get(), 4 * step, writeback, size);
  // The kicks run on their own thread, each to where the writer had got:
  // all but the last stretch of less than a step is handed over.
  CHECK(test::eventually(
      [&]() -> bool { return dirty_pages(fd.get()) < step / 4096; }));
  CHECK(writeback.kicks() >= 1);
  CHECK(writeback.kicks() <= 4);
}
