// SPDX-License-Identifier: Apache-2.0
// A session's disk share (disk.max) on the store's Btrfs quotas: a session
// filling its workspace is stopped at its share with EDQUOT, by the kernel
// for its runs and as no_space for file.write, while another session keeps
// writing and checkpointing; the full session can still checkpoint and roll
// back, and the share holds on the restored tree, across a restart, and
// from the daemon's default given in percent of the store; the qgroups of
// the trees it deleted and the groups of deleted sessions are swept. This
// machine's kernel has simple quotas, which the daemon turns on: there a
// session's checkpoints count in its share, a fork has a share of its own, and
// the group of a session from before the quotas is made at its next start.
// Under full quotas a subvolume a run made in its workspace would be
// outside the share: the syscall filter refuses it.
#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "guest/os/fs.hpp"
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

using namespace allox;
using namespace allox::test;

namespace {

/// Writes `mib` MiB of zeros into the workspace with dd; the run's row.
json::object fill(http_client& c, const std::string& a, const std::string& s,
                  const std::string& name, int mib) {
  auto id = run_id(sh(c, a, s,
                      "dd if=/dev/zero of=" + name + " bs=1M count=" +
                          std::to_string(mib) + " conv=fsync status=none"));
  return wait_done(c, a, s, id);
}

/// The run's writes failed at the share; or, with the share already full,
/// the run could not start, since handing its workspace to the sandbox
/// user writes metadata.
bool quota_refused(http_client& c, const std::string& a, const std::string& s,
                   const json::object& row) {
  const std::string full = "Disk quota exceeded";
  if (row.at("state") == "failed" && row.at("error").is_string())
    return std::string{row.at("error").as_string()}.find(full) !=
           std::string::npos;
  return row.at("root_exit_code") != 0 &&
         output(c, a, s, run_id(row), "stderr").find(full) != std::string::npos;
}

/// What the share of session s counts, once the kernel freed what deleted
/// trees held: commits until the count is below `bytes` (or a minute).
uint64_t counted_below(daemon_process& d, const std::string& s,
                       uint64_t bytes) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  for (;;) {
    REQUIRE_FALSE(os::commit_and_clean(d.root()));
    auto q = os::read_share(d.current("a", s));
    REQUIRE(q);
    if (q->referenced < bytes || std::chrono::steady_clock::now() > until)
      return q->referenced;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
}

/// The disk group of session s, once its actor's start made it.
std::optional<uint64_t> group_of(daemon_process& d, const std::string& s) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  auto group = os::disk_group(d.current("a", s));
  while (!group && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
    group = os::disk_group(d.current("a", s));
  }
  return group;
}

} // namespace

TEST_CASE("disk share: without the store's quotas disk.max is refused as "
          "unsupported, and describe counts no disk") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  auto status = expect_ok(c.rpc("process.status"));
  CHECK(status.at("store_quotas") == false);
  CHECK(status.at("store_quota_mode") == "off");
  auto s = ids("a", "s");
  expect_ok(c.rpc("session.create", s));
  auto r =
      c.rpc("session.configure", with(s, {{"limits", {{"disk.max", "8M"}}}}));
  expect_error(r, 400, "unsupported");
  CHECK(r.json.at("error") ==
        "disk.max needs Btrfs quotas on the store, which are off (start the "
        "daemon with --store-quotas)");
  auto v = expect_ok(c.rpc("session.describe", s));
  CHECK(v.at("limits") == json::object{});
  CHECK(v.at("usage").at("disk_bytes").is_null());
}

TEST_CASE("disk share: a session filling its share is stopped there while "
          "another keeps writing and checkpointing, it can still checkpoint "
          "and roll back, and the share holds after both and a restart") {
  daemon_process d{with_execution({"--store-quotas"})};
  d.start();
  auto& c = d.client();
  auto status = expect_ok(c.rpc("process.status"));
  CHECK(status.at("store_quotas") == true);
  REQUIRE(status.at("store_quota_mode") == "simple");
  auto full = ids("a", "full");
  auto other = ids("a", "other");
  expect_ok(c.rpc("session.create", full));
  expect_ok(c.rpc("session.create", other));
  for (auto bad : {"0", "8X", "101%", "-1"}) {
    CAPTURE(bad);
    expect_error(c.rpc("session.configure",
                       with(full, {{"limits", {{"disk.max", bad}}}})),
                 400, "invalid_argument");
  }
  // Taken before the share: Btrfs gives a snapshot its source's limit, so
  // only the daemon can give one to a tree restored from here.
  expect_ok(
      c.rpc("checkpoint.create", with(full, {{"checkpoint_id", "empty"}})));
  auto v = expect_ok(c.rpc("session.configure",
                           with(full, {{"limits", {{"disk.max", "8M"}}}})));
  CHECK(v.at("limits").at("disk.max") == "8M");

  // The runs' writes stop at the share; the daemon's own too.
  CHECK(quota_refused(c, "a", "full", fill(c, "a", "full", "big", 32)));
  auto w = c.rpc(
      "file.write",
      with(full, {{"path", "more"}, {"data", std::string(512 << 10, 'x')}}));
  expect_error(w, 507, "no_space");
  // The neighbour is not held by it.
  CHECK(fill(c, "a", "other", "big", 32).at("root_exit_code") == 0);
  expect_ok(c.rpc("checkpoint.create", with(other, {{"checkpoint_id", "o1"}})));
  // describe counts what the session wrote (as of the last commit).
  auto described = expect_ok(c.rpc("session.describe", full));
  CHECK(described.at("usage").at("disk_bytes").as_int64() > 4 << 20);

  // Full, it still checkpoints and rolls back, and the restored tree has
  // the share too. What the checkpoint holds still counts, until it goes.
  expect_ok(
      c.rpc("checkpoint.create", with(full, {{"checkpoint_id", "full"}})));
  expect_ok(
      c.rpc("session.rollback", with(full, {{"checkpoint_id", "empty"}})));
  CHECK(quota_refused(c, "a", "full", fill(c, "a", "full", "small", 4)));
  expect_ok(
      c.rpc("checkpoint.delete", with(full, {{"checkpoint_id", "full"}})));
  CHECK(counted_below(d, "full", 1 << 20) < 1 << 20);
  CHECK(fill(c, "a", "full", "small", 4).at("root_exit_code") == 0);
  CHECK(quota_refused(c, "a", "full", fill(c, "a", "full", "big", 32)));

  // Across a restart, with the default share of every session given in
  // percent of the store (1 % of 1 GiB): the neighbour's workspace, which
  // holds 32 MiB, cannot grow; the full session keeps its own 8M.
  d.stop();
  d.set_extra_args({"--store-quotas", "--session-limits", "disk.max=1%"});
  d.start();
  auto& c2 = d.client();
  CHECK(quota_refused(c2, "a", "other", fill(c2, "a", "other", "more", 4)));
  CHECK(quota_refused(c2, "a", "full", fill(c2, "a", "full", "big", 32)));
  // Lifting the share lets the session grow again.
  expect_ok(c2.rpc("session.configure",
                   with(full, {{"limits", {{"disk.max", "max"}}}})));
  CHECK(fill(c2, "a", "full", "big", 32).at("root_exit_code") == 0);
}

TEST_CASE("disk share: the qgroups of deleted checkpoints, of trees a "
          "rollback replaced and of deleted sessions are swept, those in "
          "use stay") {
  daemon_process d{
      with_execution({"--store-quotas", "--qgroup-sweep-ms", "200"})};
  d.start();
  auto& c = d.client();
  auto s = ids("a", "s");
  expect_ok(c.rpc("session.create", s));
  for (auto id : {"c1", "c2"})
    expect_ok(c.rpc("checkpoint.create", with(s, {{"checkpoint_id", id}})));
  auto checkpoints = d.root() + "/agents/a/workspace/sessions/s/checkpoints/";
  std::vector<uint64_t> gone{*os::subvolume_id(checkpoints + "c1"),
                             *os::subvolume_id(d.current("a", "s"))};
  expect_ok(c.rpc("checkpoint.delete", with(s, {{"checkpoint_id", "c1"}})));
  expect_ok(c.rpc("session.rollback", with(s, {{"checkpoint_id", "c2"}})));
  // The rollback's replaced tree is deleted when the session idles, and
  // dropped by the cleaner at a commit; the sweep follows.
  auto swept = [&] {
    for (auto id : gone)
      if (os::qgroup_exists(d.root(), id))
        return false;
    return true;
  };
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  while (!swept() && std::chrono::steady_clock::now() < until) {
    REQUIRE_FALSE(os::commit_and_clean(d.root()));
    std::this_thread::sleep_for(std::chrono::milliseconds{200});
  }
  CHECK(swept());
  CHECK(os::qgroup_exists(d.root(), *os::subvolume_id(d.current("a", "s"))));
  CHECK(os::qgroup_exists(d.root(), *os::subvolume_id(checkpoints + "c2")));

  // A deleted session's disk group goes once its trees are dropped; the
  // other session's stays.
  expect_ok(c.rpc("session.create", ids("a", "kept")));
  auto group = group_of(d, "s");
  auto kept = group_of(d, "kept");
  REQUIRE(group);
  REQUIRE(kept);
  expect_ok(c.rpc("session.delete", s));
  until = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  while (os::qgroup_exists(d.root(), *group) &&
         std::chrono::steady_clock::now() < until) {
    REQUIRE_FALSE(os::commit_and_clean(d.root()));
    std::this_thread::sleep_for(std::chrono::milliseconds{200});
  }
  CHECK_FALSE(os::qgroup_exists(d.root(), *group));
  CHECK(os::qgroup_exists(d.root(), *kept));
  CHECK(os::disk_group(d.current("a", "kept")) == *kept);
}

TEST_CASE("disk share: with the store's quotas on, a burst of rollbacks "
          "keeps few replaced trees waiting for the session's idle moment") {
  daemon_process d{with_execution({"--store-quotas"})};
  d.start();
  auto& c = d.client();
  auto s = ids("a", "s");
  expect_ok(c.rpc("session.create", s));
  expect_ok(c.rpc("checkpoint.create", with(s, {{"checkpoint_id", "c"}})));
  auto dir = d.root() + "/agents/a/workspace/sessions/s";
  auto waiting = [&] {
    size_t n = 0;
    auto names = os::list_dir(dir);
    REQUIRE(names);
    for (const auto& name : *names)
      n += name.rfind(".discard-", 0) == 0;
    return n;
  };
  auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < 8; ++i)
    expect_ok(c.rpc("session.rollback", with(s, {{"checkpoint_id", "c"}})));
  // Without the bound all eight would wait for the idle purge, a second
  // after the last rollback; with it, the fourth sent the first four away
  // and the eighth the next four.
  auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds{700};
  while (waiting() > 4 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  CAPTURE(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
          .count());
  CHECK(waiting() <= 4);
}

TEST_CASE("disk share: a session's checkpoints count in its share, so "
          "rewriting its workspace between checkpoints cannot fill the "
          "store, and deleting them gives the room back") {
  daemon_process d{with_execution({"--store-quotas"})};
  d.start();
  auto& c = d.client();
  auto s = ids("a", "s");
  expect_ok(c.rpc("session.create", s));
  expect_ok(
      c.rpc("session.configure", with(s, {{"limits", {{"disk.max", "24M"}}}})));
  // 12 MiB, kept by c1 and c2 (two checkpoints share it: it counts once),
  // then replaced: the new 12 MiB finds only what c1 and c2 left free.
  CHECK(fill(c, "a", "s", "data", 12).at("root_exit_code") == 0);
  for (auto id : {"c1", "c2"})
    expect_ok(c.rpc("checkpoint.create", with(s, {{"checkpoint_id", id}})));
  expect_ok(c.rpc("file.remove", with(s, {{"path", "data"}})));
  CHECK(quota_refused(c, "a", "s", fill(c, "a", "s", "data", 16)));
  auto counted = os::read_share(d.current("a", "s"));
  REQUIRE(counted);
  CHECK(counted->referenced <= 25u << 20);
  CHECK(counted->max_referenced == 24u << 20);
  // Full, it still checkpoints and rolls back; the neighbour is not held.
  expect_ok(c.rpc("checkpoint.create", with(s, {{"checkpoint_id", "c3"}})));
  expect_ok(c.rpc("session.rollback", with(s, {{"checkpoint_id", "c1"}})));
  auto other = ids("a", "other");
  expect_ok(c.rpc("session.create", other));
  CHECK(fill(c, "a", "other", "data", 32).at("root_exit_code") == 0);
  // Its checkpoints gone, what they alone held is free again.
  for (auto id : {"c2", "c3"})
    expect_ok(c.rpc("checkpoint.delete", with(s, {{"checkpoint_id", id}})));
  CHECK(counted_below(d, "s", 14u << 20) < 14u << 20);
  expect_ok(c.rpc("file.remove", with(s, {{"path", "data"}})));
  expect_ok(c.rpc("checkpoint.delete", with(s, {{"checkpoint_id", "c1"}})));
  CHECK(counted_below(d, "s", 1u << 20) < 1u << 20);
  CHECK(fill(c, "a", "s", "data", 20).at("root_exit_code") == 0);
}

TEST_CASE("disk share: under full quotas a subvolume a run made in its "
          "workspace would be outside the share, so runs may not make one") {
  // Full quotas (the guest image's 6.1) limit what current/ references; a
  // subvolume made inside it is a tree of its own, which the limit does not
  // count. (Simple quotas put a new subvolume in its parent's groups.)
  daemon_process d{with_execution()};
  d.start();
  REQUIRE_FALSE(os::enable_quotas(d.root()));
  d.stop();
  d.set_extra_args({"--store-quotas", "--session-limits", "disk.max=8M",
                    "--syscall-filter", "off"});
  d.start();
  auto& c = d.client();
  REQUIRE(expect_ok(c.rpc("process.status")).at("store_quota_mode") == "full");
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto nested = [](http_client& cl, const std::string& s) {
    return wait_done(cl, "a", s,
                     run_id(sh(cl, "a", s,
                               "btrfs -q subvolume create nested && "
                               "dd if=/dev/zero of=nested/big bs=1M count=32 "
                               "conv=fsync status=none")));
  };
  // Unfiltered, 32 MiB past an 8 MiB share.
  CHECK(nested(c, "s").at("root_exit_code") == 0);
  CHECK(quota_refused(c, "a", "s", fill(c, "a", "s", "big", 32)));
  // With the filter (the default), the subvolume is refused.
  d.stop();
  d.set_extra_args({"--store-quotas", "--session-limits", "disk.max=8M"});
  d.start();
  auto& c2 = d.client();
  expect_ok(c2.rpc("session.create", ids("a", "t")));
  auto row = nested(c2, "t");
  CHECK(row.at("root_exit_code") != 0);
  CHECK(output(c2, "a", "t", run_id(row), "stderr")
            .find("Operation not permitted") != std::string::npos);
}

TEST_CASE("disk share: run logs on the store's disk count against the "
          "share: a run printing without end is stopped there, the next "
          "run makes room, and the logs go with their session") {
  // The guest's data disk: the store and the run logs are two subvolumes
  // of one filesystem, so without a limit the logs could fill it.
  auto o =
      with_execution({"--store-quotas", "--session-limits", "disk.max=16M"});
  o.one_disk = true;
  daemon_process d{o};
  d.start();
  INFO(d.log());
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "loud")));
  expect_ok(c.rpc("session.create", ids("a", "quiet")));
  auto logs = d.runs_dir() + "/sessions/a/loud";
  auto flood = wait_done(c, "a", "loud", run_id(sh(c, "a", "loud", "yes")));
  CHECK(flood.at("root_exit_code") != 0);
  REQUIRE(os::is_subvolume(logs));
  auto held = os::allocated_bytes(logs);
  CHECK(held > 8 << 20);
  CHECK(held <= 17 << 20);
  // The neighbour runs and prints; the full session's next run gets room
  // from its finished runs' logs.
  auto quiet = run_id(sh(c, "a", "quiet", "echo hello"));
  CHECK(wait_done(c, "a", "quiet", quiet).at("root_exit_code") == 0);
  CHECK(output(c, "a", "quiet", quiet) == "hello\n");
  auto next = run_id(sh(c, "a", "loud", "echo again"));
  CHECK(wait_done(c, "a", "loud", next).at("root_exit_code") == 0);
  CHECK(output(c, "a", "loud", next) == "again\n");
  CHECK(os::kind_of(logs + "/" + run_id(flood)) == os::entry_kind::missing);
  // Its output says it is gone, not that it printed nothing.
  auto removed = expect_ok(c.rpc(
      "process.output", with(ids("a", "loud"), {{"run_id", run_id(flood)}})));
  CHECK(removed.at("logs_removed") == true);
  CHECK(removed.at("data") == "");
  auto kept = expect_ok(
      c.rpc("process.output", with(ids("a", "loud"), {{"run_id", next}})));
  CHECK_FALSE(kept.contains("logs_removed"));
  CHECK(os::allocated_bytes(logs) < 1 << 20);
  // A restart keeps the limit; deleting the session removes its logs.
  d.stop();
  d.start();
  auto& c2 = d.client();
  auto again = wait_done(c2, "a", "loud", run_id(sh(c2, "a", "loud", "yes")));
  CHECK(again.at("root_exit_code") != 0);
  CHECK(os::allocated_bytes(logs) <= 17 << 20);
  expect_ok(c2.rpc("session.delete", ids("a", "loud")));
  CHECK(os::kind_of(logs) == os::entry_kind::missing);
  CHECK(os::kind_of(d.runs_dir() + "/sessions/a/quiet") ==
        os::entry_kind::directory);
  expect_ok(c2.rpc("agent.delete", ids("a")));
  CHECK(os::kind_of(d.runs_dir() + "/sessions/a") == os::entry_kind::missing);
}

TEST_CASE("disk share: the agent's shared area is held to the daemon's "
          "default share, so no run fills the store through it") {
  daemon_process d{
      with_execution({"--store-quotas", "--session-limits", "disk.max=8M"})};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto shared = d.root() + "/agents/a/workspace/shared";
  CHECK(os::is_subvolume(shared));
  auto into_shared = [&](const std::string& name, int mib) {
    return wait_done(c, "a", "s",
                     run_id(sh(c, "a", "s",
                               "dd if=/dev/zero of=/agent/shared/" + name +
                                   " bs=1M count=" + std::to_string(mib) +
                                   " conv=fsync status=none")));
  };
  // Within the share the area works as before; past it, it is refused.
  CHECK(into_shared("small", 4).at("root_exit_code") == 0);
  CHECK(quota_refused(c, "a", "s", into_shared("big", 32)));
  // The session's own share is untouched by what the area holds.
  CHECK(fill(c, "a", "s", "own", 4).at("root_exit_code") == 0);
  // A restart keeps the limit; a new default share is taken at start.
  d.stop();
  d.set_extra_args({"--store-quotas", "--session-limits", "disk.max=64M"});
  d.start();
  // Set by the agent's actor as it starts, maybe just after /health.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (!os::subvolume_limited(shared, 64u << 20) &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  CHECK(os::subvolume_limited(shared, 64u << 20));
}

TEST_CASE("disk share: a fork has a share of its own, and a session from "
          "before the store's quotas gets its group at its next start") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  auto s = ids("a", "s");
  expect_ok(c.rpc("session.create", s));
  CHECK(fill(c, "a", "s", "old", 8).at("root_exit_code") == 0);
  expect_ok(c.rpc("checkpoint.create", with(s, {{"checkpoint_id", "c1"}})));
  d.stop();
  d.set_extra_args({"--store-quotas", "--session-limits", "disk.max=16M"});
  d.start();
  auto& c2 = d.client();
  // Simple quotas count only what is written once they are on.
  REQUIRE(group_of(d, "s"));
  auto before = os::read_share(d.current("a", "s"));
  REQUIRE(before);
  CHECK(before->referenced < 1u << 20);
  CHECK(before->max_referenced == 16u << 20);
  expect_ok(c2.rpc("session.fork", with(s, {{"new_session_id", "f"},
                                            {"checkpoint_id", "c1"}})));
  auto source = group_of(d, "s");
  auto fork = group_of(d, "f");
  REQUIRE(source);
  REQUIRE(fork);
  CHECK(*source != *fork);
  // Each writes up to its own share.
  CHECK(fill(c2, "a", "f", "new", 12).at("root_exit_code") == 0);
  CHECK(fill(c2, "a", "s", "new", 12).at("root_exit_code") == 0);
  CHECK(quota_refused(c2, "a", "f", fill(c2, "a", "f", "more", 8)));
  auto in_fork = os::read_share(d.current("a", "f"));
  REQUIRE(in_fork);
  CHECK(in_fork->referenced >= 12u << 20);
  CHECK(in_fork->referenced <= 17u << 20);
}

TEST_CASE("disk share: a store whose quotas are full keeps them, and there "
          "the share is the workspace's, with checkpoints outside it") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  auto s = ids("a", "s");
  expect_ok(c.rpc("session.create", s));
  expect_ok(c.rpc("checkpoint.create", with(s, {{"checkpoint_id", "empty"}})));
  // As turned on by a kernel without simple quotas (or a daemon before
  // them): the daemon keeps the mode the store has.
  REQUIRE_FALSE(os::enable_quotas(d.root()));
  d.stop();
  d.set_extra_args({"--store-quotas", "--session-limits", "disk.max=8M"});
  d.start();
  auto& c2 = d.client();
  REQUIRE(expect_ok(c2.rpc("process.status")).at("store_quota_mode") == "full");
  CHECK(quota_refused(c2, "a", "s", fill(c2, "a", "s", "big", 32)));
  CHECK_FALSE(os::disk_group(d.current("a", "s")));
  // The checkpoint keeps what the workspace held, outside the share: back
  // at the empty checkpoint, the restored tree has the share and room.
  expect_ok(c2.rpc("checkpoint.create", with(s, {{"checkpoint_id", "full"}})));
  expect_ok(c2.rpc("session.rollback", with(s, {{"checkpoint_id", "empty"}})));
  CHECK(os::read_share(d.current("a", "s"))->max_referenced ==
        std::optional<uint64_t>{8u << 20});
  CHECK(fill(c2, "a", "s", "small", 4).at("root_exit_code") == 0);
  CHECK(quota_refused(c2, "a", "s", fill(c2, "a", "s", "big", 32)));
  // An agent made now has a shared area held to the default share; the
  // older agent's, a plain directory, stays as it was.
  expect_ok(c2.rpc("session.create", ids("b", "t")));
  CHECK(os::is_subvolume(d.root() + "/agents/b/workspace/shared"));
  CHECK_FALSE(os::is_subvolume(d.root() + "/agents/a/workspace/shared"));
  auto shared =
      wait_done(c2, "b", "t",
                run_id(sh(c2, "b", "t",
                          "dd if=/dev/zero of=/agent/shared/big bs=1M count=32 "
                          "conv=fsync status=none")));
  CHECK(quota_refused(c2, "b", "t", shared));
}
