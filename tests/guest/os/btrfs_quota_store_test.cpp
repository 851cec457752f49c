// SPDX-License-Identifier: Apache-2.0
// Btrfs quota groups on a loop-mounted store of the test's own: a limit on
// a subvolume's referenced bytes, and the sweep of the qgroups Btrfs keeps
// after the cleaner dropped their subvolumes (full quotas); a disk group
// holding a tree and its snapshots, whose limit counts what the snapshots
// pin, and which the sweep removes once no tree is left in it (simple
// quotas, which this machine's kernel has). Needs root.
#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "tests/fixtures/scratch_btrfs.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include <unistd.h>

using namespace allox;

TEST_CASE("btrfs quota: a limit on a subvolume holds, and the qgroups of "
          "deleted subvolumes are swept while live ones stay") {
  test::scratch_btrfs disk;
  const auto& root = disk.root();
  CHECK_FALSE(os::quotas_enabled(root));
  REQUIRE_FALSE(os::enable_quotas(root));
  CHECK(os::quotas_enabled(root));
  CHECK(os::quotas_mode(root) == os::quota_mode::full);
  auto live = root + "/live";
  REQUIRE_FALSE(os::create_subvolume(live));
  // Full quotas make no groups: the share is the tree's own limit.
  auto none = os::ensure_disk_group(live);
  REQUIRE(none);
  CHECK_FALSE(*none);
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
  CHECK(os::remove_stale_qgroups(root)->trees == 0);
}

namespace {

/// Writes `mib` MiB into `path` and syncs it; false when refused.
bool write_mib(const std::string& path, int mib) {
  std::string chunk(1 << 20, 'x');
  auto* f = std::fopen(path.c_str(), "w");
  if (!f)
    return false;
  bool ok = true;
  for (int i = 0; i < mib && ok; ++i)
    ok = std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size() &&
         std::fflush(f) == 0;
  ok = ok && ::fsync(::fileno(f)) == 0;
  return std::fclose(f) == 0 && ok;
}

/// What the share of `tree` counts once a commit accounted everything.
uint64_t counted(const std::string& root, const std::string& tree) {
  REQUIRE_FALSE(os::commit_and_clean(root));
  auto q = os::read_share(tree);
  REQUIRE(q);
  return q->referenced;
}

} // namespace

TEST_CASE("btrfs quota: under simple quotas a disk group holds a tree and "
          "its snapshots, its limit counts what the snapshots pin, and the "
          "sweep removes groups empty twice") {
  test::scratch_btrfs disk;
  const auto& root = disk.root();
  REQUIRE_FALSE(os::enable_quotas(root, true));
  REQUIRE(os::quotas_mode(root) == os::quota_mode::simple);
  auto live = root + "/live";
  REQUIRE_FALSE(os::create_subvolume(live));
  // Two groups made one after the other are two groups.
  auto g1 = os::create_disk_group(live);
  auto g2 = os::create_disk_group(live);
  REQUIRE(g1);
  REQUIRE(g2);
  CHECK(*g1 != *g2);
  CHECK((*g1 >> 48) == 1u);
  CHECK_FALSE(os::disk_group(live));
  CHECK_FALSE(os::read_share(live)); // no group yet
  auto group = os::ensure_disk_group(live);
  REQUIRE(group);
  REQUIRE(*group);
  CHECK(os::disk_group(live) == *group);
  CHECK(*os::ensure_disk_group(live) == *group); // made once
  REQUIRE_FALSE(os::limit_share(live, 16u << 20));
  CHECK(os::read_share(live)->max_referenced ==
        std::optional<uint64_t>{16u << 20});

  // 10 MiB kept by a snapshot in the group, then deleted from the tree:
  // the group still counts it, so only 6 MiB more fit.
  REQUIRE(write_mib(live + "/a", 10));
  REQUIRE_FALSE(os::create_snapshot(live, root + "/snap", true, *group));
  CHECK(os::disk_group(root + "/snap") == *group);
  REQUIRE(::unlink((live + "/a").c_str()) == 0);
  CHECK(counted(root, live) >= 10u << 20);
  CHECK_FALSE(write_mib(live + "/b", 10));
  CHECK(counted(root, live) <= 17u << 20);
  // The sweep leaves what a group still counts alone.
  REQUIRE(os::remove_stale_qgroups(root));
  CHECK(counted(root, live) >= 10u << 20);

  // The snapshot gone, its 10 MiB are free; the limit can be lifted from
  // a group that is full.
  REQUIRE(::unlink((live + "/b").c_str()) == 0);
  REQUIRE_FALSE(os::delete_subvolume(root + "/snap"));
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  while (counted(root, live) > 1u << 20 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  CHECK(counted(root, live) <= 1u << 20);
  CHECK(write_mib(live + "/c", 15));
  CHECK_FALSE(write_mib(live + "/d", 4));
  REQUIRE_FALSE(os::limit_share(live, std::nullopt));
  CHECK_FALSE(os::read_share(live)->max_referenced);
  CHECK(write_mib(live + "/d", 4));

  // Disk groups with no tree in them go at the second sweep that finds
  // them empty: g1 and g2 never had one. A group that got its tree between
  // the two sweeps (one being made) stays.
  auto other = root + "/other";
  REQUIRE_FALSE(os::create_subvolume(other));
  auto g3 = os::create_disk_group(other);
  REQUIRE(g3);
  auto first = os::remove_stale_qgroups(root);
  REQUIRE(first);
  CHECK(first->groups == 0);
  auto& empty = first->empty_groups;
  for (auto g : {*g1, *g2, *g3})
    CHECK(std::count(empty.begin(), empty.end(), g) == 1);
  CHECK(std::count(empty.begin(), empty.end(), **group) == 0);
  CHECK(os::qgroup_exists(root, *g1));
  REQUIRE_FALSE(os::join_disk_group(other, *g3));
  auto second = os::remove_stale_qgroups(root, first->empty_groups);
  REQUIRE(second);
  CHECK(second->groups == 2);
  CHECK_FALSE(os::qgroup_exists(root, *g1));
  CHECK_FALSE(os::qgroup_exists(root, *g2));
  CHECK(os::qgroup_exists(root, *g3));
  CHECK(os::qgroup_exists(root, **group));
  CHECK(second->empty_groups.empty());

  // A deleted tree's group goes once the cleaner dropped the tree.
  REQUIRE_FALSE(os::delete_subvolume(live));
  std::vector<uint64_t> seen;
  until = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  while (os::qgroup_exists(root, **group) &&
         std::chrono::steady_clock::now() < until) {
    REQUIRE_FALSE(os::commit_and_clean(root));
    auto swept = os::remove_stale_qgroups(root, seen);
    REQUIRE(swept);
    seen = swept->empty_groups;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  CHECK_FALSE(os::qgroup_exists(root, **group));
  CHECK(os::qgroup_exists(root, *g3));
}
