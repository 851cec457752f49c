// SPDX-License-Identifier: Apache-2.0
// Write provenance through the daemon: runs of a session change files,
// and checkpoint.diff {writers: true} names the run and the process behind
// each change, between checkpoints and against current/. Needs root, a
// loop device and a kernel whose BTF tracepoints load.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/session_files.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

using namespace allox;
using namespace allox::test;

namespace {

/// The diff's changes by path.
std::map<std::string, json::object> diff_by_path(http_client& c,
                                                 json::object params) {
  params["writers"] = true;
  auto page = expect_ok(c.rpc("checkpoint.diff", params));
  std::map<std::string, json::object> out;
  for (const auto& ch : page.at("changes").as_array())
    out[std::string{ch.at("path").as_string()}] = ch.as_object();
  return out;
}

/// The run ids among a change's writers ("origin:action" for the
/// daemon's own).
std::set<std::string> writer_runs(const json::object& change) {
  std::set<std::string> out;
  for (const auto& w : change.at("writers").as_array())
    if (w.at("kind") == "daemon")
      out.insert(std::string{w.at("origin").as_string()} + ":" +
                 std::string{w.at("action").as_string()});
    else
      out.insert(std::string{w.at("run_id").as_string()});
  return out;
}

/// The ops of the writer whose program ends with `exe` (any when empty).
std::set<std::string> ops_of(const json::object& change,
                             const std::string& exe) {
  std::set<std::string> out;
  for (const auto& w : change.at("writers").as_array()) {
    const auto* e = w.as_object().if_contains("exe");
    std::string name =
        e != nullptr && e->is_string() ? std::string{e->as_string()} : "";
    if (!exe.empty() &&
        (name.size() < exe.size() ||
         name.compare(name.size() - exe.size(), exe.size(), exe) != 0))
      continue;
    for (const auto& op : w.at("ops").as_array())
      out.insert(std::string{op.as_string()});
  }
  return out;
}

} // namespace

TEST_CASE("write provenance: checkpoint.diff names the run and the process "
          "behind each change") {
  daemon_process d{with_execution({"--process-tracking", "ebpf"})};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto cur = d.current("a", "s");
  write_file(cur + "/old.txt", "old");
  write_file(cur + "/a.txt", "a");
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "s"), {{"checkpoint_id", "c0"}})));

  // Run A: a redirection, rm by absolute path, mv by relative ones.
  auto a = run_id(sh(c, "a", "s",
                     "cd /workspace && echo made > made.txt && "
                     "rm /workspace/old.txt && mv a.txt b.txt"));
  CHECK(wait_done(c, "a", "s", a).at("state") == "completed");
  // Run B appends to the same file and writes its own.
  auto b = run_id(sh(c, "a", "s",
                     "echo more >> /workspace/made.txt && "
                     "echo b > /workspace/from-b.txt"));
  CHECK(wait_done(c, "a", "s", b).at("state") == "completed");
  // A write from outside every run.
  write_file(cur + "/outside.txt", "x");

  auto check_interval = [&](const json::object& params) {
    auto diff = diff_by_path(c, params);
    REQUIRE(diff.count("made.txt") == 1);
    CHECK(writer_runs(diff["made.txt"]) == std::set<std::string>{a, b});
    CHECK(diff["made.txt"].at("unattributed").is_null());
    CHECK(writer_runs(diff["from-b.txt"]) == std::set<std::string>{b});
    CHECK(ops_of(diff["from-b.txt"], "") ==
          std::set<std::string>{"create", "write"});
    REQUIRE(diff.count("old.txt") == 1);
    CHECK(diff["old.txt"].at("change") == "deleted");
    CHECK(writer_runs(diff["old.txt"]) == std::set<std::string>{a});
    CHECK(ops_of(diff["old.txt"], "/rm") == std::set<std::string>{"unlink"});
    CHECK(ops_of(diff["a.txt"], "/mv") == std::set<std::string>{"rename"});
    CHECK(ops_of(diff["b.txt"], "/mv") == std::set<std::string>{"replace"});
    // Each writer carries its run's command and its own program.
    for (const auto& w : diff["made.txt"].at("writers").as_array()) {
      CHECK(w.at("run_argv").as_array()[0] == "sh");
      CHECK(w.at("exe").is_string());
      CHECK(w.at("pid").as_int64() > 0);
    }
    REQUIRE(diff.count("outside.txt") == 1);
    CHECK(diff["outside.txt"].at("writers").as_array().empty());
    CHECK(diff["outside.txt"].at("unattributed") == "untracked");
  };
  SUBCASE("against current/, then sealed in a checkpoint") {
    check_interval(with(ids("a", "s"), {{"from", "c0"}}));
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
    check_interval(with(ids("a", "s"), {{"from", "c0"}, {"to", "c1"}}));

    // The next interval has only what came after c1.
    auto later = run_id(sh(c, "a", "s", "echo c > /workspace/c.txt"));
    wait_done(c, "a", "s", later);
    auto next = diff_by_path(c, with(ids("a", "s"), {{"from", "c1"}}));
    CHECK(next.size() == 1);
    CHECK(writer_runs(next["c.txt"]) == std::set<std::string>{later});
    // Across both intervals, each change keeps its writers.
    auto both = diff_by_path(c, with(ids("a", "s"), {{"from", "c0"}}));
    CHECK(writer_runs(both["c.txt"]) == std::set<std::string>{later});
    CHECK(writer_runs(both["made.txt"]) == std::set<std::string>{a, b});

    // Deleting c1 folds its interval into the next one's.
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", "s"), {{"checkpoint_id", "c2"}})));
    expect_ok(c.rpc("checkpoint.delete",
                    with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
    auto folded =
        diff_by_path(c, with(ids("a", "s"), {{"from", "c0"}, {"to", "c2"}}));
    CHECK(writer_runs(folded["made.txt"]) == std::set<std::string>{a, b});
    CHECK(writer_runs(folded["c.txt"]) == std::set<std::string>{later});
  }
  SUBCASE("a kill -9 right after the checkpoint's answer keeps what it "
          "sealed") {
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
    d.crash();
    d.start();
    check_interval(with(ids("a", "s"), {{"from", "c0"}, {"to", "c1"}}));
    // What changed after c1 and before the crash is not known: said so.
    auto late = run_id(sh(d.client(), "a", "s", "echo late > /workspace/l"));
    wait_done(d.client(), "a", "s", late);
    write_file(cur + "/after-restart.txt", "x");
    auto now = diff_by_path(d.client(), with(ids("a", "s"), {{"from", "c1"}}));
    CHECK(writer_runs(now["l"]) == std::set<std::string>{late});
    CHECK(now["after-restart.txt"].at("unattributed") == "not_recorded");
    // A clean restart keeps them too; deleting the checkpoint removes its
    // row with it.
    d.stop();
    d.start();
    check_interval(with(ids("a", "s"), {{"from", "c0"}, {"to", "c1"}}));
  }
  SUBCASE("without writers the diff is as before") {
    auto page = expect_ok(
        c.rpc("checkpoint.diff", with(ids("a", "s"), {{"from", "c0"}})));
    CHECK_FALSE(
        page.at("changes").as_array()[0].as_object().contains("writers"));
  }
}

TEST_CASE("write provenance: the daemon's own writes name their request, and "
          "file.history lists who changed a path") {
  daemon_process d{with_execution({"--process-tracking", "ebpf"})};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto checkpoint = [&c](const char* id) {
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", "s"), {{"checkpoint_id", id}})));
  };
  auto run = [&c](const std::string& script) {
    auto id = run_id(sh(c, "a", "s", script));
    CHECK(wait_done(c, "a", "s", id).at("state") == "completed");
    return id;
  };
  checkpoint("c0");
  expect_ok(c.rpc("file.write", with(ids("a", "s"), {{"path", "notes.txt"},
                                                     {"data", "one\n"}})));
  expect_ok(c.rpc("file.mkdir", with(ids("a", "s"), {{"path", "dir"}})));
  checkpoint("c1");
  auto appended = run("echo two >> /workspace/notes.txt");
  checkpoint("c2");
  checkpoint("c3"); // changes nothing
  auto removed = run("rm /workspace/notes.txt");
  checkpoint("c4");

  auto diff =
      diff_by_path(c, with(ids("a", "s"), {{"from", "c0"}, {"to", "c1"}}));
  CHECK(writer_runs(diff["notes.txt"]) ==
        std::set<std::string>{"allox-control-plane:file.write"});
  CHECK(writer_runs(diff["dir"]) ==
        std::set<std::string>{"allox-control-plane:file.mkdir"});
  CHECK(ops_of(diff["dir"], "") == std::set<std::string>{"mkdir"});

  auto history = [&c](json::object extra) {
    return expect_ok(c.rpc(
        "file.history",
        with(with(ids("a", "s"), {{"path", "/workspace/notes.txt"}}), extra)));
  };
  auto all = history({});
  CHECK(all.at("path") == "notes.txt");
  CHECK(all.at("has_more") == false);
  const auto& h = all.at("history").as_array();
  REQUIRE(h.size() == 3);
  CHECK(h[0].at("checkpoint_id") == "c4");
  CHECK(h[0].at("change") == "deleted");
  CHECK(writer_runs(h[0].as_object()) == std::set<std::string>{removed});
  CHECK(ops_of(h[0].as_object(), "/rm") == std::set<std::string>{"unlink"});
  CHECK(h[1].at("checkpoint_id") == "c2");
  CHECK(h[1].at("change") == "modified");
  CHECK(h[1].at("parent_id") == "c1");
  CHECK(writer_runs(h[1].as_object()) == std::set<std::string>{appended});
  CHECK(h[2].at("checkpoint_id") == "c1");
  CHECK(h[2].at("change") == "added");
  CHECK(writer_runs(h[2].as_object()) ==
        std::set<std::string>{"allox-control-plane:file.write"});
  // A page at a time, newest first.
  auto first = history({{"limit", 1}});
  REQUIRE(first.at("history").as_array().size() == 1);
  CHECK(first.at("history").as_array()[0].at("checkpoint_id") == "c4");
  CHECK(first.at("has_more") == true);
  auto second = history({{"limit", 1}, {"cursor", first.at("next_cursor")}});
  REQUIRE(second.at("history").as_array().size() == 1);
  CHECK(second.at("history").as_array()[0].at("checkpoint_id") == "c2");
  // Outside the workspace: a clear error.
  auto bad =
      c.rpc("file.history", with(ids("a", "s"), {{"path", "../etc/passwd"}}));
  expect_error(bad, 400, "invalid_argument");
  // An upload and another session's share.write name their request too.
  REQUIRE(c.request("PUT", "/v1/files/a/s/u.txt", "uploaded").status == 200);
  // A tar upload replaces a directory: every path beneath it is the
  // upload's.
  temp_dir tree;
  write_file(tree / "x.txt", "x");
  write_file(tree / "y.txt", "y");
  REQUIRE(std::system(("tar -C " + tree.path() + " -cf " + tree.path() +
                       ".tar x.txt y.txt")
                          .c_str()) == 0);
  auto tar = read_file(tree.path() + ".tar");
  std::remove((tree.path() + ".tar").c_str());
  REQUIRE(c.request("PUT", "/v1/files/a/s/unpacked", tar,
                    {{"Content-Type", "application/x-tar"}})
              .status == 200);
  expect_ok(c.rpc("session.create", ids("a", "t")));
  expect_ok(
      c.rpc("share.enable", with(ids("a", "s"), {{"permission", "write"}})));
  expect_ok(c.rpc("share.enable", ids("a", "t")));
  expect_ok(
      c.rpc("share.write", with(ids("a", "t"), {{"target_agent_id", "a"},
                                                {"target_session_id", "s"},
                                                {"path", "shared.txt"},
                                                {"data_base64", "aGk="}})));
  auto daemon = diff_by_path(c, with(ids("a", "s"), {{"from", "c4"}}));
  CHECK(writer_runs(daemon["u.txt"]) ==
        std::set<std::string>{"http:file.upload"});
  for (const char* p : {"unpacked", "unpacked/x.txt", "unpacked/y.txt"})
    CHECK(writer_runs(daemon[p]) == std::set<std::string>{"http:file.upload"});
  CHECK(writer_runs(daemon["shared.txt"]) ==
        std::set<std::string>{"a/t:share.write"});
  // A rollback that keeps the replaced tree keeps its interval with it.
  expect_ok(
      c.rpc("policy.set", with(ids("a", "s"), {{"keep_pre_rollback", true}})));
  auto rolled = expect_ok(c.rpc(
      "session.rollback", with(ids("a", "s"), {{"checkpoint_id", "c4"}})));
  auto kept = rolled.at("pre_rollback_checkpoint_id");
  REQUIRE(kept.is_string());
  auto replaced =
      diff_by_path(c, with(ids("a", "s"), {{"from", "c4"}, {"to", kept}}));
  CHECK(writer_runs(replaced["shared.txt"]) ==
        std::set<std::string>{"a/t:share.write"});
  // After the rollback the live interval starts empty.
  CHECK(diff_by_path(c, with(ids("a", "s"), {{"from", "c4"}})).empty());

  // After a restart the history still names them.
  d.stop();
  d.start();
  auto again = expect_ok(d.client().rpc(
      "file.history", with(ids("a", "s"), {{"path", "notes.txt"}})));
  REQUIRE(again.at("history").as_array().size() == 3);
  CHECK(writer_runs(again.at("history").as_array()[1].as_object()) ==
        std::set<std::string>{appended});
}

TEST_CASE("write provenance: concurrent runs, a fork and a forced loss") {
  SUBCASE("two runs at once (two sessions), each named for its own files "
          "only; a fork starts its own interval") {
    daemon_process d{with_execution({"--process-tracking", "ebpf"})};
    d.start();
    auto& c = d.client();
    for (const char* s : {"s", "t"}) {
      expect_ok(c.rpc("session.create", ids("a", s)));
      expect_ok(c.rpc("checkpoint.create",
                      with(ids("a", s), {{"checkpoint_id", "c0"}})));
    }
    // Both write the same names, at once, each in its own workspace.
    auto loop = "for i in 1 2 3 4 5 6 7 8; do echo $i > /workspace/f-$i; "
                "sleep 0.02; done";
    auto one = run_id(sh(c, "a", "s", loop));
    auto two = run_id(sh(c, "a", "t", loop));
    CHECK(wait_done(c, "a", "s", one).at("state") == "completed");
    CHECK(wait_done(c, "a", "t", two).at("state") == "completed");
    for (const char* s : {"s", "t"})
      expect_ok(c.rpc("checkpoint.create",
                      with(ids("a", s), {{"checkpoint_id", "c1"}})));
    for (const auto& [s, run] : {std::pair{"s", one}, std::pair{"t", two}}) {
      auto diff =
          diff_by_path(c, with(ids("a", s), {{"from", "c0"}, {"to", "c1"}}));
      REQUIRE(diff.size() == 8);
      for (int i = 1; i <= 8; ++i)
        CHECK(writer_runs(diff["f-" + std::to_string(i)]) ==
              std::set<std::string>{run});
    }
    auto fork = expect_ok(
        c.rpc("session.fork", with(ids("a", "s"), {{"new_session_id", "f"},
                                                   {"checkpoint_id", "c1"}})));
    auto in_fork = run_id(sh(c, "a", "f", "echo f > /workspace/fork.txt"));
    CHECK(wait_done(c, "a", "f", in_fork).at("state") == "completed");
    auto base = expect_ok(c.rpc("checkpoint.list", ids("a", "f")))
                    .at("checkpoints")
                    .as_array()[0]
                    .at("checkpoint_id");
    auto fdiff = diff_by_path(c, with(ids("a", "f"), {{"from", base}}));
    REQUIRE(fdiff.size() == 1);
    CHECK(writer_runs(fdiff["fork.txt"]) == std::set<std::string>{in_fork});
    // The source's intervals are its own still.
    auto again =
        diff_by_path(c, with(ids("a", "s"), {{"from", "c0"}, {"to", "c1"}}));
    CHECK(writer_runs(again["f-1"]) == std::set<std::string>{one});
    (void)fork;
  }
  SUBCASE("records lost to a one-page ring mark changes `loss`, never a "
          "wrong writer") {
    daemon_process d{with_execution(
        {"--process-tracking", "ebpf", "--tracker-ring-bytes", "4096"})};
    d.start();
    auto& c = d.client();
    expect_ok(c.rpc("session.create", ids("a", "s")));
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", "s"), {{"checkpoint_id", "c0"}})));
    // One process creating files as fast as it can (touch with thousands
    // of names) outruns the reader of a one-page ring every time.
    auto burst = run_id(
        sh(c, "a", "s", "cd /workspace && seq -f f%g 1 5000 | xargs touch"));
    wait_done(c, "a", "s", burst);
    auto page = expect_ok(
        c.rpc("checkpoint.diff",
              with(ids("a", "s"),
                   {{"from", "c0"}, {"writers", true}, {"limit", 10000}})));
    size_t named = 0, lost = 0;
    for (const auto& ch : page.at("changes").as_array()) {
      const auto& o = ch.as_object();
      if (!o.at("writers").as_array().empty()) {
        ++named;
        CHECK(writer_runs(o) == std::set<std::string>{burst});
      } else {
        CHECK(o.at("unattributed") == "loss");
        ++lost;
      }
    }
    CHECK(named + lost == 5000);
    CHECK(lost > 0);
    // Counted for the session, as the TRACKER counts them by cause.
    auto dump = expect_ok(c.rpc("system.dump"));
    auto* node = dump_node(dump.at("tree").as_object(), "session");
    REQUIRE(node != nullptr);
    const auto& writes = node->at("writes").as_object();
    CHECK(writes.at("records_lost").as_int64() > 0);
    CHECK(writes.at("records").as_int64() > 0);
  }
}
