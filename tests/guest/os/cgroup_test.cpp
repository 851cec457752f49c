// SPDX-License-Identifier: Apache-2.0
// The cgroup v2 helpers on the real cgroupfs of this machine: who removes
// which group, and creation racing a sibling's clean-up.
#include "guest/os/cgroup.hpp"
#include "tests/fixtures/cgroup_subtree.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

using namespace allox;

namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

using scratch_tree = test::cgroup_subtree;

} // namespace

TEST_CASE("cgroup: a session's clean-up removes its own group, never the "
          "agent's") {
  scratch_tree t;
  auto s1 = t.tree.session_group("a", "s1");
  REQUIRE_FALSE(os::prepare_group(s1));
  os::remove_group(s1);
  CHECK_FALSE(exists(s1));
  CHECK(exists(t.tree.agent_group("a") + "/sessions"));
  // The agent's deletion removes what is left.
  os::remove_agent_groups(t.tree, "a");
  CHECK_FALSE(exists(t.tree.agent_group("a")));
}

TEST_CASE("cgroup: agent groups stay while a session group is below them") {
  scratch_tree t;
  auto s1 = t.tree.session_group("a", "s1");
  REQUIRE_FALSE(os::prepare_group(s1));
  os::remove_agent_groups(t.tree, "a");
  CHECK(exists(s1));
}

TEST_CASE("cgroup: sibling groups created and removed at once never fail") {
  scratch_tree t;
  std::atomic<int> failures{0};
  auto cycle = [&](const std::string& sid) {
    auto group = t.tree.session_group("a", sid);
    for (int i = 0; i < 2000; ++i) {
      if (os::prepare_group(group))
        ++failures;
      os::remove_group(group);
    }
  };
  std::thread one{cycle, "s1"};
  std::thread two{cycle, "s2"};
  one.join();
  two.join();
  CHECK(failures == 0);
}

TEST_CASE("cgroup: the OOM kills of memory.events, and none without the "
          "memory controller") {
  CHECK(os::oom_kills_of("low 0\nhigh 12\nmax 40\noom 3\noom_kill 2\n"
                         "oom_group_kill 0\n") == 2);
  CHECK(os::oom_kills_of("low 0\nhigh 0\n") == 0);
  CHECK(os::oom_kills_of("") == 0);
  test::cgroup_subtree sub;
  auto all = sub.tree.controllers();
  bool memory = std::find(all.begin(), all.end(), "memory") != all.end();
  auto group = sub.tree.session_group("a", "s");
  REQUIRE_FALSE(os::prepare_group(group));
  // The development machines have no controllers: no memory.events.
  if (!memory)
    CHECK_FALSE(os::oom_kills(group));
  CHECK_FALSE(os::oom_kills(group + "/missing"));
}

TEST_CASE("cgroup: a group's own counters, cpu.stat always, the others "
          "where their controllers reach it") {
  CHECK(os::keyed_count("max 7\n", "max") == 7);
  CHECK(os::keyed_count("max.imposed 3\nmax 4\n", "max") == 4);
  CHECK(os::keyed_count("usage_usec 12\nuser_usec 5\n", "system_usec") == 0);
  test::cgroup_subtree sub;
  auto all = sub.tree.controllers();
  auto has = [&](const char* c) {
    return std::find(all.begin(), all.end(), c) != all.end();
  };
  auto group = sub.tree.session_group("a", "s");
  REQUIRE_FALSE(os::prepare_group(group));
  auto c = os::read_counters(group);
  CHECK(c.present);
  CHECK(c.cpu_usage_usec >= 0);
  // A controller the subtree lacks has no files in the group.
  if (!has("memory"))
    CHECK_FALSE((c.memory_bytes || c.memory_peak_bytes || c.oom_kills));
  if (!has("pids"))
    CHECK_FALSE((c.pids_current || c.pids_refused));
  CHECK_FALSE(os::read_counters(group + "/missing").present);
}

TEST_CASE("cgroup: a session's counts outlive the groups of its runs") {
  os::group_counters total;
  os::group_counters gone;
  gone.present = true;
  gone.cpu_usage_usec = 100;
  gone.oom_kills = 1;
  gone.pids_refused = 4;
  gone.memory_peak_bytes = 50;
  os::add_retired(total, gone);
  gone.memory_peak_bytes = 30;
  os::add_retired(total, gone);
  os::add_retired(total, os::group_counters{}); // a group that was gone
  CHECK(total.cpu_usage_usec == 200);
  CHECK(total.oom_kills == 2);
  CHECK(total.pids_refused == 8);
  CHECK(total.memory_peak_bytes == 50);
  // Nothing runs now: in use is 0, where it was ever counted.
  auto idle = os::with_retired(os::group_counters{}, total);
  CHECK(idle.present);
  CHECK(idle.cpu_usage_usec == 200);
  CHECK(idle.memory_bytes == 0);
  CHECK(idle.pids_current == 0);
  CHECK(idle.oom_kills == 2);
  // A live group adds its own.
  os::group_counters live;
  live.present = true;
  live.cpu_usage_usec = 5;
  live.memory_bytes = 70;
  live.memory_peak_bytes = 80;
  live.pids_current = 3;
  live.oom_kills = 0;
  live.pids_refused = 1;
  auto now = os::with_retired(live, total);
  CHECK(now.cpu_usage_usec == 205);
  CHECK(now.memory_bytes == 70);
  CHECK(now.memory_peak_bytes == 80);
  CHECK(now.pids_current == 3);
  CHECK(now.oom_kills == 2);
  CHECK(now.pids_refused == 9);
  // Without controllers only CPU time is counted.
  os::group_counters cpu_only;
  cpu_only.present = true;
  cpu_only.cpu_usage_usec = 9;
  auto bare = os::with_retired(os::group_counters{}, cpu_only);
  CHECK(bare.cpu_usage_usec == 9);
  CHECK_FALSE((bare.memory_bytes || bare.oom_kills || bare.pids_current ||
               bare.pids_refused));
}
