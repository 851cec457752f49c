// SPDX-License-Identifier: Apache-2.0
// Btrfs quota groups on a loop-mounted store of the test's own: a limit on
// a subvolume's referenced bytes, and the sweep of the qgroups Btrfs keeps
// after the cleaner dropped their subvolumes. Needs root.
#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "guest/os/loop_mount.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

using namespace allox;

TEST_CASE("btrfs quota: a limit on a subvolume holds, and the qgroups of "
          "deleted subvolumes are swept while live ones stay") {
  test::temp_dir dir;
  auto store = os::loop_mount::open(dir / "image", 256ull << 20, dir / "mnt");
  REQUIRE(store);
  auto root = dir / "mnt";
  CHECK_FALSE(os::quotas_enabled(root));
  REQUIRE_FALSE(os::enable_quotas(root));
  CHECK(os::quotas_enabled(root));
  auto live = root + "/live";
  REQUIRE_FALSE(os::create_subvolume(live));
  REQUIRE_FALSE(os::limit_referenced(live, 8u << 20));
  auto q = os::read_qgroup(live);
  REQUIRE(q);
  CHECK(q->max_referenced == std::optional<uint64_t>{8u << 20});
  // A snapshot takes its source's limit (Btrfs copies it).
  REQUIRE_FALSE(os::create_snapshot(live, root + "/kept", true));
  CHECK(os::read_qgroup(root + "/kept")->max_referenced ==
        std::optional<uint64_t>{8u << 20});

  std::vector<uint64_t> gone;
  for (auto name : {"/a", "/b"}) {
    REQUIRE_FALSE(os::create_snapshot(live, root + name, true));
    gone.push_back(*os::subvolume_id(root + name));
    REQUIRE_FALSE(os::delete_subvolume(root + name));
  }
  // Deleted, not yet dropped (the cleaner waits for a commit it is woken
  // for): a kernel that refuses to remove a qgroup still counting bytes
  // (6.18) keeps them for now; a live one the sweep never touches.
  REQUIRE(os::remove_stale_qgroups(root));
  CHECK(os::qgroup_exists(root, *os::subvolume_id(live)));
  // Once the cleaner dropped them they go: 6.18 removes an empty one
  // itself, older kernels leave it to the sweep.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  auto left = [&] {
    size_t n = 0;
    for (auto id : gone)
      n += os::qgroup_exists(root, id);
    return n;
  };
  while (left() > 0 && std::chrono::steady_clock::now() < until) {
    REQUIRE_FALSE(os::commit_and_clean(root));
    REQUIRE(os::remove_stale_qgroups(root));
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  CHECK(left() == 0);
  for (auto id : gone)
    CHECK_FALSE(os::qgroup_exists(root, id));
  CHECK(os::qgroup_exists(root, *os::subvolume_id(live)));
  CHECK(os::qgroup_exists(root, *os::subvolume_id(root + "/kept")));
  CHECK(os::read_qgroup(live)->max_referenced ==
        std::optional<uint64_t>{8u << 20});
  CHECK(*os::remove_stale_qgroups(root) == 0);
}
