// SPDX-License-Identifier: Apache-2.0
// A store written by the Python prototype (its JSON indexes, JSONL audit
// logs and an interrupted rollback transaction) is adopted on first start.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/session_files.hpp"

#include "guest/os/btrfs.hpp"
#include "guest/os/loop_mount.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using namespace allox;
using namespace allox::test;
namespace fs = std::filesystem;

namespace {

/// Lays out agents/a/workspace/sessions/<s> with checkpoints c1 and c2 the
/// way the prototype's store does (`current` and snapshots as subvolumes).
void prototype_session(const std::string& root, const std::string& s) {
  auto dir = root + "/agents/a/workspace/sessions/" + s;
  fs::create_directories(root + "/agents/a/workspace/shared");
  fs::create_directories(dir + "/checkpoints");
  REQUIRE_FALSE(os::create_subvolume(dir + "/current"));
  fs::create_directories(dir + "/current/.allox-tmp");
  write_file(dir + "/current/f", "one");
  REQUIRE_FALSE(
      os::create_snapshot(dir + "/current", dir + "/checkpoints/c1", true));
  write_file(dir + "/current/f", "two");
  REQUIRE_FALSE(
      os::create_snapshot(dir + "/current", dir + "/checkpoints/c2", true));
  write_file(dir + "/current/f", "dirty");
  fs::create_directories(root + "/.allox/indexes/a");
  write_file(root + "/.allox/indexes/a/" + s + ".json", R"({
  "checkpoints": {
    "c1": {"child_ids": ["c2"], "created_at_ns": 100, "message": "first",
           "metadata": {"turn": 1}, "missing": false, "origin": "allox-cli",
           "parent_id": null, "pinned": true},
    "c2": {"child_ids": ["__live__"], "created_at_ns": 200, "message": null,
           "metadata": null, "missing": false, "origin": "turn-lifecycle",
           "parent_id": "c1", "pinned": false}
  },
  "head": "c2",
  "version": 1
}
)");
}

} // namespace

TEST_CASE("import: a prototype store is adopted once, interrupted rollback "
          "included") {
  daemon_process d;
  {
    auto store = os::loop_mount::open(d.image(), 1ull << 30, d.root());
    REQUIRE(store);
    auto root = d.root();
    prototype_session(root, "s");
    prototype_session(root, "s2");
    // s2 was killed between the two renames of a rollback to c1.
    auto s2 = root + "/agents/a/workspace/sessions/s2";
    fs::rename(s2 + "/current", s2 + "/.discard-0123");
    REQUIRE_FALSE(os::create_snapshot(s2 + "/checkpoints/c1",
                                      s2 + "/.restore-0123", false));
    fs::create_directories(root + "/.allox/transactions/a");
    write_file(root + "/.allox/transactions/a/s2.json", R"({
  "checkpoint_id": "c1", "discard_name": ".discard-0123", "origin": "allox-cli",
  "phase": "old_moved", "restore_name": ".restore-0123",
  "scrub_runtime": true, "version": 1
})");
    // s shared its files for writing; s2 never did.
    fs::create_directories(root + "/.allox/shares/a");
    write_file(root + "/.allox/shares/a/s.json", R"({
  "enabled": true,
  "permission": "write",
  "scope": "."
}
)");
    fs::create_directories(root + "/.allox/events/a");
    write_file(root + "/.allox/events/store.jsonl",
               R"({"op":"store.initialize","timestamp_ns":10})"
               "\n");
    write_file(
        root + "/.allox/events/a/agent.jsonl",
        R"({"agent_id":"a","op":"agent.create","origin":"allox-cli","timestamp_ns":11})"
        "\n");
    write_file(
        root + "/.allox/events/a/s.jsonl",
        R"({"agent_id":"a","checkpoint_id":"c1","message":"first","metadata":{"turn":1},"op":"checkpoint.create","origin":"allox-cli","pinned":true,"session_id":"s","timestamp_ns":100})"
        "\n"
        R"({"agent_id":"a","op":"checkpoint.create","session_id":"s","timesta)");
  }
  d.start();
  auto& c = d.client();
  auto list = expect_ok(c.rpc("checkpoint.list", ids("a", "s")));
  CHECK(list.at("head") == "c2");
  CHECK(list.at("checkpoint_ids") == json::array{"c1", "c2"});
  auto& c1 = list.at("checkpoints").as_array()[0].as_object();
  CHECK(c1.at("message") == "first");
  CHECK(c1.at("pinned") == true);
  CHECK(c1.at("metadata") == json::object{{"turn", 1}});
  CHECK(c1.at("origin") == "allox-cli");
  CHECK(c1.at("child_ids") == json::array{"c2"});
  // The prototype recorded no generations; diff reads them from the
  // snapshots instead of walking both trees.
  auto diff = expect_ok(c.rpc(
      "checkpoint.diff", with(ids("a", "s"), {{"from", "c1"}, {"to", "c2"}})));
  CHECK(diff.at("method") == "generation");
  CHECK(diff.at("changes") == json::array{json::object{{"path", "f"},
                                                       {"change", "modified"},
                                                       {"type", "file"}}});
  // The interrupted rollback was finished as the prototype would.
  auto s2 = expect_ok(c.rpc("checkpoint.list", ids("a", "s2")));
  CHECK(s2.at("head") == "c1");
  CHECK(read_file(d.current("a", "s2") + "/f") == "one");
  CHECK(session_entries(d, "a", "s2", ".restore-").empty());
  CHECK(session_entries(d, "a", "s2", ".discard-").empty());
  // The old audit trail is ours now, with its timestamps.
  auto ev = expect_ok(
      c.rpc("audit.list", with(ids("a", "s"), {{"op", "checkpoint.create"}})));
  REQUIRE(ev.at("events").as_array().size() == 1); // the torn line is skipped
  auto& e = ev.at("events").as_array()[0].as_object();
  CHECK(e.at("timestamp_ns") == 100);
  CHECK(e.at("imported_from") == "prototype");
  CHECK(e.at("checkpoint_id") == "c1");
  CHECK(audit_ops(c, {{"op", "store.import"}}).size() == 1);
  // The share policies came along.
  auto shared = expect_ok(c.rpc("share.status", ids("a", "s")));
  CHECK(shared.at("enabled") == true);
  CHECK(shared.at("permission") == "write");
  CHECK(expect_ok(c.rpc("share.status", ids("a", "s2"))).at("enabled") ==
        false);
  auto recovered = expect_ok(
      c.rpc("audit.list",
            with(ids("a", "s2"), {{"op", "session.rollback.recovered"}})));
  REQUIRE(recovered.at("events").as_array().size() == 1);
  CHECK(recovered.at("events").as_array()[0].as_object().at("outcome") ==
        "committed");
  CHECK(d.log().find("adopting a store written by the prototype") !=
        std::string::npos);
  // Works like any of our sessions, and is imported only once.
  expect_ok(c.rpc("session.rollback",
                  with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
  CHECK(read_file(d.current("a", "s") + "/f") == "one");
  d.stop();
  d.start();
  CHECK(audit_ops(c, {{"op", "store.import"}}).size() == 1);
  CHECK(expect_ok(c.rpc("checkpoint.list", ids("a", "s"))).at("head") == "c1");
}

TEST_CASE("import: a malformed prototype transaction stops the start") {
  daemon_process d;
  {
    auto store = os::loop_mount::open(d.image(), 1ull << 30, d.root());
    REQUIRE(store);
    prototype_session(d.root(), "s");
    fs::create_directories(d.root() + "/.allox/transactions/a");
    write_file(d.root() + "/.allox/transactions/a/s.json",
               R"({"version":1,"phase":"prepared","checkpoint_id":"c1",)"
               R"("restore_name":"../../etc","discard_name":".discard-1"})");
  }
  auto [code, out] =
      run_daemon({"--root", d.root(), "--loop-image", d.image(), "--listen",
                  "127.0.0.1:" + std::to_string(free_port())});
  CHECK(code == 1);
  CHECK(out.find("unsafe path") != std::string::npos);
  CHECK(out.find("store unmounted") != std::string::npos);
}
