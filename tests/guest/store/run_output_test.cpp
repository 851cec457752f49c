// SPDX-License-Identifier: Apache-2.0
// A session's run logs on a loop-mounted Btrfs of the test's own with
// quotas on: the directory is made once (a subvolume, or a plain one),
// its limit holds a writer, and reclaiming removes finished runs' logs
// oldest first, sparing the live ones, until enough was freed, after which
// the room is back. Needs root.
#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "guest/os/fs.hpp"
#include "guest/os/unique_fd.hpp"
#include "guest/store/run_output.hpp"
#include "tests/fixtures/scratch_btrfs.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <vector>

using namespace allox;

namespace {

/// A run directory holding `mib` MiB of log, written and synced; the
/// directories' change times follow the order they were written in.
void write_run(const std::string& logs, const std::string& run, int mib) {
  auto dir = logs + "/" + run;
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  os::unique_fd fd{::open((dir + "/stdout.log").c_str(),
                          O_WRONLY | O_CREAT | O_CLOEXEC, 0600)};
  REQUIRE(fd);
  std::string chunk(1 << 20, 'x');
  for (int i = 0; i < mib; ++i)
    REQUIRE(::write(fd.get(), chunk.data(), chunk.size()) ==
            static_cast<ssize_t>(chunk.size()));
  REQUIRE(::fsync(fd.get()) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds{10});
}

bool exists(const std::string& path) {
  return os::kind_of(path) != os::entry_kind::missing;
}

} // namespace

TEST_CASE("run output: a session's logs are one subvolume at its share, "
          "and reclaiming frees its oldest finished runs' logs first") {
  test::scratch_btrfs disk;
  const auto& root = disk.root();
  REQUIRE_FALSE(os::enable_quotas(root, true));
  auto logs = store::session_output_dir(root, "a", "s");
  CHECK(logs == root + "/sessions/a/s");
  CHECK(store::agent_output_dir(root, "a") == root + "/sessions/a");
  // Made once; again, nothing changes.
  REQUIRE_FALSE(store::ensure_output_dir(logs, true));
  REQUIRE(os::is_subvolume(logs));
  auto id = os::subvolume_id(logs);
  REQUIRE_FALSE(store::ensure_output_dir(logs, true));
  CHECK(os::subvolume_id(logs) == id);
  CHECK_FALSE(os::subvolume_limited(logs, 12u << 20));
  CHECK(store::output_room(logs) == std::numeric_limits<int64_t>::max());
  REQUIRE_FALSE(os::limit_subvolume(logs, 12u << 20));
  CHECK(os::subvolume_limited(logs, 12u << 20));

  // Three finished runs of 3 MiB and a live one of 2 MiB: 11 of 12.
  for (auto run : {"old", "mid", "new"})
    write_run(logs, run, 3);
  write_run(logs, "live", 2);
  REQUIRE_FALSE(os::commit_and_clean(logs));
  CHECK(store::output_room(logs) < 2 << 20);
  // The limit holds a writer.
  os::unique_fd more{::open((logs + "/live/stdout.log").c_str(),
                            O_WRONLY | O_APPEND | O_CLOEXEC)};
  std::string chunk(1 << 20, 'y');
  bool refused = false;
  for (int i = 0; i < 4 && !refused; ++i)
    refused = ::write(more.get(), chunk.data(), chunk.size()) < 0 &&
              errno == EDQUOT;
  CHECK(refused);

  // 4 MiB asked: the oldest two go, the newest finished run and the live
  // one stay.
  auto removed = store::reclaim_output(logs, {"live"}, 4 << 20);
  REQUIRE(removed);
  CHECK(*removed == 2);
  CHECK_FALSE(exists(logs + "/old"));
  CHECK_FALSE(exists(logs + "/mid"));
  CHECK(exists(logs + "/new"));
  CHECK(exists(logs + "/live"));
  CHECK(store::output_room(logs) >= 4 << 20);
  // Asked for more than there is, only the live run is left.
  removed = store::reclaim_output(logs, {"live"}, 64 << 20);
  REQUIRE(removed);
  CHECK(*removed == 1);
  CHECK(exists(logs + "/live"));

  // Without a share the logs are a plain directory, and limiting one is
  // refused rather than limiting the tree it is in.
  auto plain = store::session_output_dir(root, "a", "p");
  REQUIRE_FALSE(store::ensure_output_dir(plain, false));
  CHECK_FALSE(os::is_subvolume(plain));
  CHECK(os::kind_of(plain) == os::entry_kind::directory);
  REQUIRE_FALSE(store::ensure_output_dir(plain, true));
  CHECK_FALSE(os::is_subvolume(plain));
  CHECK(os::limit_subvolume(plain, 1u << 20));
  CHECK(os::same_btrfs(plain, logs));
  CHECK_FALSE(os::same_btrfs(plain, disk.outside()));
}
