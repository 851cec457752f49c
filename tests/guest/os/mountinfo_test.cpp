// SPDX-License-Identifier: Apache-2.0
#include "guest/os/mountinfo.hpp"

#include <doctest/doctest.h>

using namespace allox;

namespace {

// Shaped like this machine: cgroup v2 below a tmpfs of v1 hierarchies.
constexpr const char* sample =
    "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
    "30 22 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
    "41 30 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    "42 30 0:39 / /sys/fs/cgroup/memory rw shared:5 - cgroup cgroup "
    "rw,memory\n"
    "60 22 7:0 / /tmp/with\\040space rw,noatime - btrfs /dev/loop0 "
    "rw,space_cache=v2\n"
    "garbage line\n";

} // namespace

TEST_CASE("mountinfo: parses fields, optional tags and escapes") {
  auto mounts = os::parse_mountinfo(sample);
  REQUIRE(mounts.size() == 5);
  CHECK(mounts[2].fs_type == "cgroup2");
  CHECK(mounts[2].mount_point == "/sys/fs/cgroup/unified");
  CHECK(mounts[3].fs_type == "cgroup");
  CHECK(mounts[3].super_options == "rw,memory");
  CHECK(mounts[4].mount_point == "/tmp/with space");
  CHECK(mounts[4].source == "/dev/loop0");
}

TEST_CASE("mountinfo: cgroup2 is found where it is, not assumed") {
  auto mounts = os::parse_mountinfo(sample);
  auto* cg = os::find_cgroup2(mounts);
  REQUIRE(cg != nullptr);
  CHECK(cg->mount_point == "/sys/fs/cgroup/unified");
}

TEST_CASE("mountinfo: deepest containing mount wins") {
  auto mounts = os::parse_mountinfo(sample);
  CHECK(os::mount_containing(mounts, "/tmp/with space/a/b")->fs_type ==
        "btrfs");
  CHECK(os::mount_containing(mounts, "/tmp/with")->fs_type == "ext4");
  CHECK(os::mount_containing(mounts, "/sys/fs/cgroup/unified/x")->fs_type ==
        "cgroup2");
}

TEST_CASE("mountinfo: unescape") {
  CHECK(os::unescape_mount_field("a\\040b\\011c\\012d\\134e") ==
        "a b\tc\nd\\e");
  CHECK(os::unescape_mount_field("trailing\\04") == "trailing\\04");
}

TEST_CASE("mountinfo: this machine has a readable table") {
  auto mounts = os::read_mountinfo();
  REQUIRE(mounts);
  CHECK_FALSE(mounts->empty());
}
