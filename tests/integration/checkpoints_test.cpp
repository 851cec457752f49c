// SPDX-License-Identifier: Apache-2.0
// Checkpoints, rollback, leases and resets against the real daemon on a
// loop-mounted Btrfs store.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/session_files.hpp"
#include "tests/fixtures/wait.hpp"

#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "guest/os/loop_mount.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <thread>

using namespace allox;
using namespace allox::test;

namespace {

/// A session with a file `f` whose content we control.
struct workspace {
  daemon_process& d;
  std::string a, s;

  std::string current() const { return d.current(a, s); }
  void put(const std::string& name, const std::string& text) const {
    write_file(current() + "/" + name, text);
  }
  std::string get(const std::string& name) const {
    return read_file(current() + "/" + name);
  }
  json::object checkpoint(const std::string& id, json::object extra = {}) {
    return expect_ok(
        d.client().rpc("checkpoint.create",
                       with(with(ids(a, s), {{"checkpoint_id", id}}), extra)));
  }
  json::object rollback(json::object how) {
    return expect_ok(d.client().rpc("session.rollback", with(ids(a, s), how)));
  }
  json::object list() {
    return expect_ok(d.client().rpc("checkpoint.list", ids(a, s)));
  }
};

json::object record(const json::object& list, const std::string& id) {
  for (const auto& r : list.at("checkpoints").as_array())
    if (r.as_object().at("checkpoint_id") == json::value(id))
      return r.as_object();
  FAIL("no record " << id);
  return {};
}

} // namespace

TEST_CASE("checkpoints: create, list and describe with the reference "
          "shapes") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  workspace w{d, "a", "s"};
  auto first = w.checkpoint("c1", {{"message", "first"},
                                   {"metadata", json::object{{"k", 1}}},
                                   {"pinned", true},
                                   {"origin", "tester"}});
  CHECK(first == json::object{{"agent_id", "a"},
                              {"session_id", "s"},
                              {"checkpoint_id", "c1"},
                              {"parent_id", nullptr},
                              {"metadata", json::object{{"k", 1}}}});
  auto snapshot = d.root() + "/agents/a/workspace/sessions/s/checkpoints/c1";
  CHECK(os::is_subvolume(snapshot));
  // Read-only: writing into a checkpoint fails.
  CHECK(::access((snapshot + "/.allox-tmp").c_str(), F_OK) == 0);
  CHECK(::mkdir((snapshot + "/new").c_str(), 0755) != 0);

  auto autoid = expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  auto id = std::string{autoid.at("checkpoint_id").as_string()};
  CHECK(id.rfind("cp-", 0) == 0);
  CHECK(autoid.at("parent_id") == "c1");

  auto list = w.list();
  CHECK(list.at("head") == json::value(id));
  CHECK(list.at("checkpoint_ids") == json::array{"c1", json::value(id)});
  auto c1 = record(list, "c1");
  CHECK(c1.at("message") == "first");
  CHECK(c1.at("pinned") == true);
  CHECK(c1.at("origin") == "tester");
  CHECK(c1.at("missing") == false);
  CHECK(c1.at("child_ids") == json::array{json::value(id)});
  CHECK(record(list, id).at("child_ids") == json::array{"__live__"});
  CHECK(c1.at("created_at_ns").as_int64() > 0);

  auto page =
      expect_ok(c.rpc("checkpoint.list", with(ids("a", "s"), {{"limit", 1}})));
  REQUIRE(page.at("checkpoints").as_array().size() == 1);
  CHECK(page.at("has_more") == true);
  CHECK(page.at("next_cursor") == "c1");
  CHECK_FALSE(page.contains("checkpoint_ids")); // only the full list has it
  CHECK(list.contains("checkpoint_ids"));
  auto next =
      expect_ok(c.rpc("checkpoint.list",
                      with(ids("a", "s"), {{"limit", 1}, {"cursor", "c1"}})));
  CHECK(next.at("checkpoints").as_array()[0].as_object().at("checkpoint_id") ==
        json::value(id));
  CHECK(next.at("has_more") == false);

  auto desc = expect_ok(c.rpc("session.describe", ids("a", "s")));
  CHECK(desc.at("checkpoint_head") == json::value(id));
  CHECK(desc.at("checkpoint_ids").as_array().size() == 2);

  auto one = expect_ok(c.rpc("checkpoint.describe",
                             with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
  CHECK(one.at("checkpoint_id") == "c1");
  auto by_prefix = c.rpc("checkpoint.describe",
                         with(ids("a", "s"), {{"checkpoint_id", "c"}}));
  expect_error(by_prefix, 400, "invalid_argument"); // c1 and cp-...
  CHECK(one.at("is_head") == false);

  auto dup = c.rpc("checkpoint.create",
                   with(ids("a", "s"), {{"checkpoint_id", "c1"}}));
  expect_error(dup, 400, "already_exists");
  CHECK(dup.json.as_object().at("error") == "checkpoint already exists: c1");
  expect_error(c.rpc("checkpoint.list", ids("a", "nope")), 400, "not_found");
  expect_error(c.rpc("checkpoint.create",
                     with(ids("a", "s"), {{"metadata", json::array{1}}})),
               400, "invalid_argument");
  auto ops = audit_ops(c, with(ids("a", "s"), {{"op", "checkpoint.create"}}));
  CHECK(ops.size() == 2);
  auto ev = expect_ok(
      c.rpc("audit.list",
            with(ids("a", "s"), {{"op", "checkpoint.create"}, {"limit", 1}})));
  auto& e = ev.at("events").as_array()[0].as_object();
  CHECK(e.at("checkpoint_id") == "c1");
  CHECK(e.at("message") == "first");
  CHECK(e.at("pinned") == true);
  CHECK(e.at("metadata") == json::object{{"k", 1}});
  CHECK(e.at("origin") == "tester");
}

TEST_CASE("checkpoints: rollback restores only that session, .allox-tmp "
          "included") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  for (auto [a, s] : std::vector<std::pair<std::string, std::string>>{
           {"a", "s"}, {"a", "sibling"}, {"b", "s"}})
    expect_ok(c.rpc("session.create", ids(a, s)));
  workspace w{d, "a", "s"}, sibling{d, "a", "sibling"}, other{d, "b", "s"};
  auto shared = d.root() + "/agents/a/workspace/shared/notes";
  w.put("f", "v1");
  w.put(".allox-tmp/t", "tmp1");
  w.checkpoint("one");
  w.put("f", "v2");
  w.put("added", "x");
  w.put(".allox-tmp/t", "tmp2");
  sibling.put("f", "sibling");
  other.put("f", "other");
  write_file(shared, "shared");
  auto r = w.rollback({{"checkpoint_id", "one"}});
  CHECK(r.at("checkpoint_id") == "one");
  CHECK(r.at("relative_workspace") == "agents/a/workspace/sessions/s/current");
  CHECK(r.at("removed_runtime_entries") == json::array{});
  CHECK(w.get("f") == "v1");
  CHECK(w.get(".allox-tmp/t") == "tmp1");
  CHECK(::access((w.current() + "/added").c_str(), F_OK) != 0);
  CHECK(sibling.get("f") == "sibling");
  CHECK(other.get("f") == "other");
  CHECK(read_file(shared) == "shared");
  CHECK(os::is_subvolume(w.current()));
  CHECK(session_entries(d, "a", "s", ".restore-").empty());
  // The replaced tree is deleted once the session has been idle a moment.
  CHECK(eventually(
      [&] { return session_entries(d, "a", "s", ".discard-").empty(); }));
  auto ev = expect_ok(
      c.rpc("audit.list", with(ids("a", "s"), {{"op", "session.rollback"}})));
  auto& e = ev.at("events").as_array().at(0).as_object();
  CHECK(e.at("checkpoint_id") == "one");
  CHECK(e.at("scrub_runtime") == true);
  CHECK(e.at("removed_runtime_entries") == json::array{});
}

TEST_CASE("checkpoints: later checkpoints are kept - a new checkpoint after "
          "rollback starts a branch") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  workspace w{d, "a", "s"};
  w.put("f", "1");
  w.checkpoint("c1");
  w.put("f", "2");
  w.checkpoint("c2");
  w.put("f", "3");
  w.checkpoint("c3");
  w.rollback({{"checkpoint_id", "c1"}});
  CHECK(w.get("f") == "1");
  auto list = w.list();
  CHECK(list.at("checkpoint_ids") == json::array{"c1", "c2", "c3"});
  CHECK(list.at("head") == "c1");
  w.put("f", "1b");
  auto branch = w.checkpoint("c4");
  CHECK(branch.at("parent_id") == "c1");
  list = w.list();
  CHECK(record(list, "c1").at("child_ids") == json::array{"c2", "c4"});
  CHECK(record(list, "c4").at("child_ids") == json::array{"__live__"});
  CHECK(record(list, "c3").at("child_ids") == json::array{});
  // Forward again to the other branch.
  w.rollback({{"checkpoint_id", "c3"}});
  CHECK(w.get("f") == "3");
}

TEST_CASE("checkpoints: num_ancestors 1/2/3") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  workspace w{d, "a", "s"};
  expect_error(
      c.rpc("session.rollback", with(ids("a", "s"), {{"num_ancestors", 1}})),
      400, "not_found");
  for (auto v : {"1", "2", "3"}) {
    w.put("f", v);
    w.checkpoint(std::string{"c"} + v);
  }
  w.put("f", "dirty");
  CHECK(w.rollback({{"num_ancestors", 1}}).at("checkpoint_id") == "c3");
  CHECK(w.get("f") == "3");
  CHECK(w.rollback({{"num_ancestors", 2}}).at("checkpoint_id") == "c2");
  CHECK(w.get("f") == "2");
  // The head moved to c2, so its grandparent is beyond the root.
  auto far =
      c.rpc("session.rollback", with(ids("a", "s"), {{"num_ancestors", 3}}));
  expect_error(far, 400, "not_found");
  CHECK(far.json.as_object().at("error") ==
        "checkpoint lineage ends before ancestor 3");
  CHECK(w.rollback({{"num_ancestors", 2}}).at("checkpoint_id") == "c1");
  CHECK(w.get("f") == "1");
  expect_error(
      c.rpc("session.rollback", with(ids("a", "s"), {{"num_ancestors", true}})),
      400, "invalid_argument");
  expect_error(c.rpc("session.rollback", ids("a", "s")), 400,
               "invalid_argument");
}

TEST_CASE("checkpoints: prefixes resolve uniquely or not at all") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  workspace w{d, "a", "s"};
  w.put("f", "x");
  w.checkpoint("alpha-1");
  w.put("f", "y");
  w.checkpoint("alpha-2");
  w.checkpoint("beta");
  CHECK(w.rollback({{"checkpoint_id", "alpha-1"}}).at("checkpoint_id") ==
        "alpha-1");
  CHECK(w.rollback({{"checkpoint_id", "be"}}).at("checkpoint_id") == "beta");
  auto amb = c.rpc("session.rollback",
                   with(ids("a", "s"), {{"checkpoint_id", "alpha"}}));
  expect_error(amb, 400, "invalid_argument");
  CHECK(amb.json.as_object().at("error") ==
        "checkpoint prefix is ambiguous: alpha");
  auto none = c.rpc("checkpoint.delete",
                    with(ids("a", "s"), {{"checkpoint_id", "gamma"}}));
  expect_error(none, 400, "not_found");
  CHECK(none.json.as_object().at("error") ==
        "checkpoint does not exist: gamma");
}

TEST_CASE("checkpoints: delete, pins and re-parenting") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  workspace w{d, "a", "s"};
  w.checkpoint("c1");
  w.checkpoint("c2", {{"pinned", true}});
  w.checkpoint("c3");
  auto pinned = c.rpc("checkpoint.delete",
                      with(ids("a", "s"), {{"checkpoint_id", "c2"}}));
  expect_error(pinned, 400, "conflict");
  CHECK(pinned.json.as_object().at("error") ==
        "checkpoint is pinned; use force to delete: c2");
  auto del = expect_ok(c.rpc(
      "checkpoint.delete",
      with(ids("a", "s"),
           {{"checkpoint_id", "c2"}, {"force", true}, {"origin", "gc"}})));
  CHECK(del == json::object{{"agent_id", "a"},
                            {"session_id", "s"},
                            {"checkpoint_id", "c2"},
                            {"deleted", true}});
  CHECK(
      ::access(
          (d.root() + "/agents/a/workspace/sessions/s/checkpoints/c2").c_str(),
          F_OK) != 0);
  auto list = w.list();
  CHECK(record(list, "c3").at("parent_id") == "c1");
  CHECK(record(list, "c1").at("child_ids") == json::array{"c3"});
  // Deleting the head moves it to the parent.
  expect_ok(c.rpc("checkpoint.delete",
                  with(ids("a", "s"), {{"checkpoint_id", "c3"}})));
  CHECK(w.list().at("head") == "c1");
  auto ops = audit_ops(c, with(ids("a", "s"), {{"op", "checkpoint.delete"}}));
  CHECK(ops.size() == 2);
}

TEST_CASE("checkpoints: sockets and FIFOs restored from a checkpoint are "
          "scrubbed unless asked not to") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  workspace w{d, "a", "s"};
  auto tmp = w.current() + "/.allox-tmp";
  REQUIRE(::mkdir((tmp + "/sub").c_str(), 0700) == 0);
  REQUIRE(::mkfifo((tmp + "/sub/fifo").c_str(), 0600) == 0);
  int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  auto sock_path = tmp + "/sock";
  std::strncpy(addr.sun_path, sock_path.c_str(), sizeof(addr.sun_path) - 1);
  REQUIRE(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  ::close(sock);
  w.put(".allox-tmp/keep", "file");
  w.checkpoint("c1");
  auto r = w.rollback({{"checkpoint_id", "c1"}});
  CHECK(r.at("removed_runtime_entries") == json::array{"sock", "sub/fifo"});
  CHECK(w.get(".allox-tmp/keep") == "file");
  CHECK(::access((tmp + "/sock").c_str(), F_OK) != 0);
  auto kept = w.rollback({{"checkpoint_id", "c1"}, {"scrub_runtime", false}});
  CHECK(kept.at("removed_runtime_entries") == json::array{});
  CHECK(::access((tmp + "/sub/fifo").c_str(), F_OK) == 0);
}

TEST_CASE("checkpoints: leases block mutations of their own session only") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(c.rpc("session.create", ids("a", "other")));
  workspace w{d, "a", "s"};
  w.checkpoint("c1");
  auto lease = expect_ok(c.rpc("execution.acquire", ids("a", "s")));
  auto token = std::string{lease.at("lease_token").as_string()};
  CHECK(token.size() == 32);
  auto again = c.rpc("execution.acquire", ids("a", "s"));
  expect_error(again, 400, "conflict");
  CHECK(again.json.as_object().at("error") ==
        "session already has an active execution: a/s");
  auto blocked = c.rpc("checkpoint.create", ids("a", "s"));
  expect_error(blocked, 400, "conflict");
  CHECK(blocked.json.as_object().at("error") ==
        "session has active executions: a/s");
  expect_error(
      c.rpc("session.rollback", with(ids("a", "s"), {{"checkpoint_id", "c1"}})),
      400, "conflict");
  expect_error(c.rpc("session.delete", ids("a", "s")), 400, "conflict");
  // Another session of the same agent is unaffected.
  expect_ok(c.rpc("checkpoint.create", ids("a", "other")));
  expect_ok(c.rpc("execution.acquire", ids("a", "other")));
  // Reads still work.
  expect_ok(c.rpc("checkpoint.list", ids("a", "s")));
  auto released =
      expect_ok(c.rpc("execution.release", {{"lease_token", token}}));
  CHECK(released.at("released") == true);
  CHECK(expect_ok(c.rpc("execution.release", {{"lease_token", token}}))
            .at("released") == false);
  CHECK(expect_ok(c.rpc("execution.release", {{"lease_token", "nope"}}))
            .at("released") == false);
  expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
}

TEST_CASE("checkpoints: runtime reset fences, returns executions and lets "
          "its own token roll back") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  workspace w{d, "a", "s"};
  w.put("f", "1");
  w.checkpoint("c1");
  w.put("f", "2");
  auto reg = expect_ok(c.rpc(
      "runtime.register_background",
      with(ids("a", "s"), {{"sandbox_id", "sb"}, {"execution_id", "e1"}})));
  CHECK(reg == json::object{{"registered", true}, {"execution_id", "e1"}});
  auto persistent =
      c.rpc("session.rollback", with(ids("a", "s"), {{"checkpoint_id", "c1"}}));
  expect_error(persistent, 400, "conflict");
  CHECK(persistent.json.as_object().at("error") ==
        "session has persistent runtime executions: a/s; use runtime "
        "reset before rollback");
  expect_error(c.rpc("checkpoint.create", ids("a", "s")), 400, "conflict");

  auto reset = expect_ok(c.rpc("runtime.begin_reset", ids("a", "s")));
  auto token = std::string{reset.at("reset_token").as_string()};
  CHECK(
      reset.at("executions") ==
      json::array{json::object{{"sandbox_id", "sb"}, {"execution_id", "e1"}}});
  // Fenced: no leases, no plain mutations, no second reset.
  expect_error(c.rpc("execution.acquire", ids("a", "s")), 400, "conflict");
  expect_error(c.rpc("runtime.begin_reset", ids("a", "s")), 400, "conflict");
  expect_error(
      c.rpc("runtime.register_background",
            with(ids("a", "s"), {{"sandbox_id", "x"}, {"execution_id", "e2"}})),
      400, "conflict");
  auto wrong = c.rpc(
      "session.rollback_after_runtime_reset",
      with(ids("a", "s"), {{"checkpoint_id", "c1"}, {"reset_token", "bad"}}));
  expect_error(wrong, 400, "invalid_argument");
  CHECK(wrong.json.as_object().at("error") ==
        "invalid runtime reset token for session");
  expect_error(c.rpc("session.rollback_after_runtime_reset",
                     with(ids("a", "s"), {{"checkpoint_id", "c1"}})),
               400, "invalid_argument");
  auto rolled = expect_ok(c.rpc(
      "session.rollback_after_runtime_reset",
      with(ids("a", "s"), {{"checkpoint_id", "c1"}, {"reset_token", token}})));
  CHECK(rolled.at("checkpoint_id") == "c1");
  CHECK(w.get("f") == "1");
  auto done = expect_ok(c.rpc("runtime.complete_reset",
                              {{"reset_token", token}, {"success", true}}));
  CHECK(done == json::object{{"completed", true}, {"success", true}});
  expect_error(c.rpc("runtime.complete_reset", {{"reset_token", token}}), 400,
               "not_found");
  // Background registrations were forgotten with success=true.
  expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
}

TEST_CASE("checkpoints: an administrator can lift a forgotten reset fence") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(c.rpc(
      "runtime.register_background",
      with(ids("a", "s"), {{"sandbox_id", "sb"}, {"execution_id", "e1"}})));
  expect_ok(c.rpc("runtime.begin_reset", ids("a", "s")));
  expect_error(c.rpc("checkpoint.create", ids("a", "s")), 400, "conflict");
  auto r = expect_ok(
      c.rpc("session.unfence", with(ids("a", "s"), {{"origin", "admin"}})));
  CHECK(r.at("unfenced") == true);
  CHECK(r.at("cleared").as_object().at("reset") == true);
  CHECK(r.at("cleared").as_object().at("background_executions") == 1);
  expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  auto ev = expect_ok(
      c.rpc("audit.list", with(ids("a", "s"), {{"op", "session.unfence"}})));
  REQUIRE(ev.at("events").as_array().size() == 1);
  CHECK(ev.at("events").as_array()[0].as_object().at("origin") == "admin");
}

TEST_CASE("checkpoints: restart keeps the DAG - vanished snapshots are "
          "missing and deletable - foreign snapshots are adopted") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  workspace w{d, "a", "s"};
  w.checkpoint("c1", {{"message", "m"}});
  w.checkpoint("c2");
  w.checkpoint("c3");
  d.stop();
  d.start();
  auto list = w.list();
  CHECK(list.at("head") == "c3");
  CHECK(record(list, "c1").at("message") == "m");
  CHECK(record(list, "c2").at("parent_id") == "c1");
  d.stop();
  // Outside the daemon: one snapshot vanishes, one appears.
  auto cps = d.root() + "/agents/a/workspace/sessions/s/checkpoints";
  {
    auto img = os::loop_mount::open(d.image(), 1ull << 30, d.root());
    REQUIRE(img);
    REQUIRE_FALSE(os::delete_subvolume(cps + "/c2"));
    REQUIRE_FALSE(
        os::create_snapshot(d.current("a", "s"), cps + "/manual", true));
  }
  d.start();
  list = w.list();
  CHECK(record(list, "c2").at("missing") == true);
  CHECK(list.at("checkpoint_ids") == json::array{"c1", "c3", "manual"});
  auto manual = record(list, "manual");
  CHECK(manual.at("origin") == "filesystem-recovery");
  CHECK(manual.at("parent_id").is_null());
  // A missing entry cannot be a rollback target but can be deleted.
  expect_error(
      c.rpc("session.rollback", with(ids("a", "s"), {{"checkpoint_id", "c2"}})),
      400, "not_found");
  expect_ok(c.rpc("checkpoint.delete",
                  with(ids("a", "s"), {{"checkpoint_id", "c2"}})));
  CHECK(record(w.list(), "c3").at("parent_id") == "c1");
  auto ops = audit_ops(c, with(ids("a", "s"), {{"op", "checkpoint.adopt"}}));
  CHECK(ops.size() == 1);
}

TEST_CASE("checkpoints: intent records go once the session is idle, or once "
          "enough have piled up") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  workspace w{d, "a", "s"};
  auto cps = d.root() + "/agents/a/workspace/sessions/s/checkpoints";
  auto records = [&] {
    size_t n = 0;
    if (auto names = os::list_dir(cps))
      for (const auto& name : *names)
        n += name.rfind(".creating-", 0) == 0;
    return n;
  };
  w.checkpoint("c1");
  w.checkpoint("c2");
  CHECK(records() == 2); // the rows are not synced yet
  CHECK(eventually([&] { return records() == 0; }));
  // A long burst syncs on its own, without an idle moment, once 256
  // rows wait (max_unsynced_intents).
  for (int i = 0; i < 270; ++i)
    w.checkpoint("b" + std::to_string(i));
  // Sooner than the idle sync could (a second after the last checkpoint).
  CHECK(eventually([&] { return records() < 270; },
                   std::chrono::milliseconds{800}));
  CHECK(record(w.list(), "b269").at("parent_id") == "b268");
}

TEST_CASE("checkpoints: a burst of mutations shares one worker thread, which "
          "ends once the session is idle") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto dump = expect_ok(c.rpc("system.dump"));
  auto pid = dump.at("daemon").as_object().at("pid").as_int64();
  auto threads = [&] {
    auto names = os::list_dir("/proc/" + std::to_string(pid) + "/task");
    return names ? names->size() : 0;
  };
  auto lane = [&] {
    auto now = expect_ok(c.rpc("system.dump"));
    auto* session = dump_node(now.at("tree").as_object(), "session");
    REQUIRE(session != nullptr);
    return session->at("lane").as_bool();
  };
  REQUIRE(eventually([&] { return !lane(); }));
  auto idle_threads = threads();
  workspace w{d, "a", "s"};
  w.checkpoint("c1");
  w.checkpoint("c2");
  w.rollback({{"checkpoint_id", "c1"}});
  CHECK(lane());
  CHECK(threads() <= idle_threads + 2); // the lane, perhaps a short job
  CHECK(eventually([&] { return !lane() && threads() == idle_threads; }));
}
