// SPDX-License-Identifier: Apache-2.0
// The probe's own contract on the real kernel: load settings, fault
// points, tracking bookkeeping. Needs root.
#include "bpf/loader.hpp"

#include "guest/os/cgroup.hpp"
#include "tests/fixtures/wait.hpp"
#include "tests/tracking/tracking_fixture.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

using namespace allox;

TEST_CASE("probe: loads, attaches and reads the kernel's exit prototype") {
  auto probe = bpf::process_probe::open();
  REQUIRE_MESSAGE(probe, (probe ? "" : message_of(probe.error())));
  CHECK((*probe)->ring_fd() >= 0);
  auto losses = (*probe)->losses();
  REQUIRE(losses);
  CHECK(losses->total() == 0);
  CHECK(bpf::loss_cause_name(ALLOX_LOSS_TASKS_FULL) == "tasks_full");
}

TEST_CASE("probe: a ring size that is no power of two is refused before "
          "load") {
  bpf::probe_options opts;
  opts.ring_bytes = 5000;
  auto probe = bpf::process_probe::open(std::move(opts));
  REQUIRE_FALSE(probe);
  CHECK(code_of(probe.error()) == errc::invalid_argument);
  CHECK(message_of(probe.error()).find("ring buffer size") !=
        std::string::npos);
}

TEST_CASE("probe: an injected load failure is an error value") {
  if (!fault_injection_enabled())
    return;
  bpf::probe_options opts;
  opts.faults.arm({"tracking.probe.load", "throw", 0});
  auto probe = bpf::process_probe::open(std::move(opts));
  REQUIRE_FALSE(probe);
  CHECK(message_of(probe.error()).find("load the process probe") !=
        std::string::npos);
}

TEST_CASE("probe: track and untrack keep one run per cgroup") {
  auto opened = bpf::process_probe::open();
  REQUIRE(opened);
  auto& probe = **opened;
  CHECK(code_of(probe.track(1, 0)) == errc::invalid_argument);
  REQUIRE_FALSE(probe.track(1001, 7));
  CHECK(probe.knows(7));
  CHECK(code_of(probe.track(1001, 8)) == errc::conflict);
  CHECK_FALSE(probe.knows(8)); // the refused run left nothing behind
  // One run may span two cgroups; it ends with its last one.
  REQUIRE_FALSE(probe.track(1002, 7));
  REQUIRE(probe.untrack(1001));
  CHECK(probe.knows(7));
  REQUIRE(probe.counters(7));
  REQUIRE(probe.untrack(1002));
  CHECK_FALSE(probe.knows(7));
  CHECK(code_of(probe.counters(7).error()) == errc::not_found);
  CHECK(code_of(probe.untrack(1002).error()) == errc::not_found);
}

TEST_CASE("probe: a cgroup's id is its cgroupfs inode") {
  test::scratch_cgroup group;
  struct stat st {};
  REQUIRE(::stat(group.path().c_str(), &st) == 0);
  CHECK(group.id() == static_cast<uint64_t>(st.st_ino));
  CHECK_FALSE(bpf::cgroup_id("/nonexistent/cgroup"));
}

TEST_CASE("probe: untracking a run drops its live processes from the "
          "kernel, and only its own") {
  auto opened = bpf::process_probe::open();
  REQUIRE(opened);
  auto& probe = **opened;
  test::scratch_cgroup many;
  test::scratch_cgroup few;
  REQUIRE_FALSE(probe.track(many.id(), 21));
  REQUIRE_FALSE(probe.track(few.id(), 22));
  // More live processes than one batch of the walk holds.
  constexpr size_t sleepers = bpf::process_probe::task_batch + 44;
  auto big =
      many.start(test::shell("i=0; while [ $i -lt " + std::to_string(sleepers) +
                             " ]; do sleep 60 & i=$((i+1)); done; wait"));
  auto small = few.start(test::shell("sleep 60 & sleep 60 & wait"));
  REQUIRE(test::eventually(
      [&] {
        return probe.live_processes(21) == sleepers + 1 &&
               probe.live_processes(22) == 3;
      },
      std::chrono::seconds{20}));
  REQUIRE(probe.untrack(many.id()));
  CHECK(probe.live_processes(21) == 0);
  CHECK(probe.live_processes(22) == 3);
  REQUIRE(probe.untrack(few.id()));
  CHECK(probe.live_processes(22) == 0);
  (void)os::kill_group(many.path());
  (void)os::kill_group(few.path());
  CHECK(sandbox::wait_child(big) != 0);
  CHECK(sandbox::wait_child(small) != 0);
}
