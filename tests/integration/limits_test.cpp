// SPDX-License-Identifier: Apache-2.0
// Session limits as a caller sees them on this machine's cgroup tree:
// session.describe names the limits of the next run, a limit is taken
// where its controller reaches the daemon's subtree and refused naming the
// controller where it does not (the development machines have none), and
// so is a default given with --session-limits, which then refuses the
// start. The guest VM, whose tree has controllers, is driven by
// guest/image/boot-test.sh.
#include "tests/fixtures/cgroup_subtree.hpp"
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <fstream>

using namespace allox;
using namespace allox::test;

namespace {

/// Whether a subtree of the daemon's kind (a child of the v2 mount) can
/// use `controller`.
bool available(const std::string& controller) {
  cgroup_subtree probe;
  auto all = probe.tree.controllers();
  return std::find(all.begin(), all.end(), controller) != all.end();
}

} // namespace

TEST_CASE("limits: session.describe names the next run's limits, each limit "
          "file is taken where its controller is, refused naming it where "
          "not") {
  daemon_process d{with_execution()};
  d.start();
  auto s = ids("a", "s");
  expect_ok(d.client().rpc("session.create", s));
  auto v = expect_ok(d.client().rpc("session.describe", s));
  CHECK(v.at("limits") == json::object{});
  for (auto [file, value] :
       {std::pair{"memory.max", "256M"}, std::pair{"memory.high", "200M"},
        std::pair{"pids.max", "128"}, std::pair{"cpu.max", "50000 100000"},
        std::pair{"cpu.weight", "50"}, std::pair{"io.weight", "default 50"}}) {
    CAPTURE(file);
    std::string name{file};
    auto controller = name.substr(0, name.find('.'));
    auto r = d.client().rpc("session.configure",
                            with(s, {{"limits", {{file, value}}}}));
    if (available(controller)) {
      CHECK(expect_ok(r).at("limits").at(file) == value);
      continue;
    }
    expect_error(r, 400, "unsupported");
    CHECK(r.json.at("error").as_string().find(
              name + " needs the " + controller + " cgroup controller") == 0);
  }
  auto unknown = d.client().rpc("session.configure",
                                with(s, {{"limits", {{"swap.max", "0"}}}}));
  expect_error(unknown, 400, "invalid_argument");
  CHECK(unknown.json.at("error") ==
        "unknown limit: swap.max (memory.max, memory.high, pids.max, "
        "cpu.max, cpu.weight, io.max, io.weight, disk.max)");
  // What was refused changed nothing.
  v = expect_ok(d.client().rpc("session.describe", s));
  if (!available("memory") && !available("pids") && !available("cpu") &&
      !available("io"))
    CHECK(v.at("limits") == json::object{});
}

TEST_CASE("limits: --session-limits takes FILE=VALUE, and one the machine "
          "cannot enforce refuses the start, naming its controller") {
  test::temp_dir dir;
  auto start = [&](const std::string& limit) {
    return run_daemon({"--root", dir / "store", "--loop-image",
                       dir / "store.img", "--loop-size", "1G", "--listen",
                       "127.0.0.1:" + std::to_string(free_port()),
                       "--process-audit-root", dir / "runs", "--session-limits",
                       limit},
                      std::chrono::seconds{30});
  };
  auto [code, out] = start("pids.max");
  CHECK(code != 0);
  CHECK(out.find("--session-limits takes FILE=VALUE, not pids.max") !=
        std::string::npos);
  if (available("pids"))
    return; // enforced here: the guest VM's case (boot-test.sh)
  auto [code2, out2] = start("pids.max=64");
  CHECK(code2 != 0);
  CHECK(out2.find("pids.max needs the pids cgroup controller") !=
        std::string::npos);
}

TEST_CASE("limits: a daemon the OOM killer passes over starts its runs at 0, "
          "and describe shows what the session's cgroup counted") {
  daemon_process d{with_execution()};
  d.start();
  // As the guest's unit does (OOMScoreAdjust), before the first run.
  {
    std::ofstream adj{"/proc/" + std::to_string(d.pid()) + "/oom_score_adj"};
    adj << "-900";
  }
  // Read at start (here before the write; the guest VM's unit sets it
  // before exec, and guest/image/boot-test.sh checks it there).
  auto dump = expect_ok(d.client().rpc("system.dump"));
  CHECK(dump.at("daemon").at("oom_score_adj").is_int64());
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto id = run_id(sh(c, "a", "s", "cat /proc/self/oom_score_adj"));
  CHECK(wait_done(c, "a", "s", id).at("state") == "completed");
  CHECK(output(c, "a", "s", id) == "0\n");
  // What the session's cgroup counted: the run's CPU time at least.
  auto v = expect_ok(c.rpc("session.describe", ids("a", "s")));
  CHECK(v.at("usage").at("cpu_usage_usec").as_int64() > 0);
  if (!available("pids"))
    CHECK(v.at("usage").at("pids_refused").is_null());
}

TEST_CASE("limits: process.status names the store's block device, as io.max "
          "wants it") {
  daemon_process d{with_execution()};
  d.start();
  auto loop = expect_ok(d.client().rpc("system.dump"))
                  .at("daemon")
                  .at("loop_device")
                  .as_string();
  struct stat st {};
  REQUIRE(::stat(loop.c_str(), &st) == 0);
  auto status = expect_ok(d.client().rpc("process.status"));
  CHECK(status.at("store_devices") ==
        json::array{json::value(std::to_string(major(st.st_rdev)) + ":" +
                                std::to_string(minor(st.st_rdev)))});
}
