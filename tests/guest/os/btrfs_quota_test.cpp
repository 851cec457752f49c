// SPDX-License-Identifier: Apache-2.0
#include "guest/os/btrfs_quota.hpp"

#include <doctest/doctest.h>

using namespace allox;

TEST_CASE("btrfs quota: disk.max takes bytes, binary suffixes, a "
          "percentage of the store or max, and refuses the rest") {
  constexpr uint64_t store = 10ull << 30;
  auto bytes = [&](const char* v) {
    return *os::parse_disk_limit(v, store);
  };
  CHECK(bytes("4096") == 4096u);
  CHECK(bytes("8K") == 8u << 10);
  CHECK(bytes("64M") == 64u << 20);
  CHECK(bytes("2G") == 2ull << 30);
  CHECK(bytes("1T") == 1ull << 40);
  CHECK(bytes("10%") == store / 100 * 10);
  CHECK(bytes("100%") == store / 100 * 100);
  CHECK_FALSE(bytes("max").has_value());
  for (auto bad : {"", "0", "0M", "M", "8m", "8MB", "-1", "1.5G", "101%",
                   "max ", "99999999999999999999", "9999999999999G"}) {
    CAPTURE(bad);
    auto r = os::parse_disk_limit(bad, store);
    REQUIRE_FALSE(r);
    CHECK(code_of(r.error()) == errc::invalid_argument);
  }
  // A percentage of a store whose size is unknown is no share at all.
  CHECK_FALSE(os::parse_disk_limit("50%", 0));
}
