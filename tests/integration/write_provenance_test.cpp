// SPDX-License-Identifier: Apache-2.0
// Write provenance through the daemon: runs of a session change files,
// and checkpoint.diff {writers: true} names the run and the process behind
// each change, between checkpoints and against current/. Needs root, a
// loop device and a kernel whose BTF tracepoints load.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

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

/// The run ids among a change's writers.
std::set<std::string> writer_runs(const json::object& change) {
  std::set<std::string> out;
  for (const auto& w : change.at("writers").as_array())
    out.insert(std::string{w.at("run_id").as_string()});
  return out;
}

/// The ops of the writer whose program ends with `exe` (any when empty).
std::set<std::string> ops_of(const json::object& change,
                             const std::string& exe) {
  std::set<std::string> out;
  for (const auto& w : change.at("writers").as_array()) {
    const auto& e = w.at("exe");
    std::string name = e.is_string() ? std::string{e.as_string()} : "";
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
  SUBCASE("a daemon restart forgets the intervals and says so") {
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
    d.stop();
    d.start();
    auto diff = diff_by_path(
        d.client(), with(ids("a", "s"), {{"from", "c0"}, {"to", "c1"}}));
    CHECK(diff["made.txt"].at("unattributed") == "not_recorded");
  }
  SUBCASE("without writers the diff is as before") {
    auto page = expect_ok(
        c.rpc("checkpoint.diff", with(ids("a", "s"), {{"from", "c0"}})));
    CHECK_FALSE(
        page.at("changes").as_array()[0].as_object().contains("writers"));
  }
}
