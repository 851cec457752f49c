// SPDX-License-Identifier: Apache-2.0
// Live checkpoints: a checkpoint of a session whose runs are alive
// freezes their cgroup for the snapshot (cgroup.freeze), so the snapshot
// is one instant of their writes and they go on afterwards. Rollback
// still refuses while runs live; external leases and background
// registrations keep the prototype's conflict.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

using namespace allox;
using namespace allox::test;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The session's live_checkpoints counter (system.dump).
int64_t live_checkpoints(http_client& c) {
  auto dump = expect_ok(c.rpc("system.dump"));
  auto* node = dump_node(dump.at("tree").as_object(), "session");
  REQUIRE(node != nullptr);
  return node->at("counters").as_object().at("live_checkpoints").as_int64();
}

} // namespace

TEST_CASE("live checkpoint: a run that keeps writing is frozen for the "
          "snapshot, which holds a whole file, and completes normally") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  // Rewrites state.txt (64 KiB of one digit, through a temporary file and
  // a rename) as fast as it can for two seconds, then reports its count.
  auto run = run_id(sh(c, "a", "s", R"(python3 - <<'PY'
import os, time
end = time.monotonic() + 2
n = 0
while time.monotonic() < end:
    n += 1
    with open('state.tmp', 'w') as f:
        f.write(str(n % 10) * 65536)
    os.rename('state.tmp', 'state.txt')
print(n)
PY)"));
  std::this_thread::sleep_for(std::chrono::milliseconds{500});
  std::vector<std::string> ids_taken;
  for (int i = 0; i < 5; ++i) {
    auto cp = expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
    ids_taken.emplace_back(cp.at("checkpoint_id").as_string());
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  // Rollback still refuses while the run lives.
  expect_error(
      c.rpc("session.rollback",
            with(ids("a", "s"), {{"checkpoint_id", ids_taken.front()}})),
      400, "conflict");
  auto row = wait_done(c, "a", "s", run);
  CHECK(row.at("state") == "completed");
  CHECK(row.at("root_exit_code") == 0);
  CHECK(std::stol(output(c, "a", "s", run)) > 10);
  CHECK(live_checkpoints(c) == 5);
  auto base = d.root() + "/agents/a/workspace/sessions/s/checkpoints/";
  for (const auto& id : ids_taken) {
    CAPTURE(id);
    auto text = slurp(base + id + "/state.txt");
    REQUIRE(text.size() == 65536);
    CHECK(text.find_first_not_of(text[0]) == std::string::npos);
  }
}

TEST_CASE("live checkpoint: the run is thawed after the snapshot, also "
          "when the snapshot fails, and a turn's automatic checkpoint "
          "works beside a dev server") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  // Through a rename: `date > tick` leaves the file empty from the
  // truncation until date has started, and two reads that both fell there
  // would look like a clock that stopped.
  auto server = run_id(sh(c, "a", "s",
                          "while :; do date +%s%N > tick.new; "
                          "mv tick.new tick; sleep 0.01; done"));
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  auto group = d.cgroup_root() + "/agents/a/sessions/s";
  // A failing snapshot (the name is taken) must not leave it frozen.
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "s"), {{"checkpoint_id", "same"}})));
  expect_error(c.rpc("checkpoint.create",
                     with(ids("a", "s"), {{"checkpoint_id", "same"}})),
               400, "already_exists");
  CHECK(slurp(group + "/cgroup.events").find("frozen 0") != std::string::npos);
  auto before = slurp(d.current("a", "s") + "/tick");
  CHECK_FALSE(before.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds{200});
  CHECK(slurp(d.current("a", "s") + "/tick") != before); // still ticking
  expect_ok(c.rpc("policy.set",
                  with(ids("a", "s"), {{"auto_checkpoint_turns", true}})));
  expect_ok(c.rpc("turn.session_start", ids("a", "s")));
  auto end =
      expect_ok(c.rpc("turn.end", with(ids("a", "s"), {{"turn_id", "t1"}})));
  CHECK(end.at("created") == true);
  // An external lease still refuses, as in the prototype.
  expect_ok(c.rpc("process.stop", with(ids("a", "s"), {{"run_id", server}})));
  auto lease = expect_ok(c.rpc("execution.acquire", ids("a", "s")));
  expect_error(c.rpc("checkpoint.create", ids("a", "s")), 400, "conflict");
  expect_ok(
      c.rpc("execution.release", {{"lease_token", lease.at("lease_token")}}));
  expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
}
