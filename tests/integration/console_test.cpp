// SPDX-License-Identifier: Apache-2.0
// The operator console (GET /ui) in a real headless Chromium against a
// running daemon: the page loads, shows what the test created, opens a
// checkpoint's diff, and leaves a screenshot in the build tree
// (console.png) as an artefact. Also what the page relies on: a run's row
// carries its argv, and runs start and end in the audit trail.
#include "tests/fixtures/bulk_client.hpp"
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace allox;
using namespace allox::test;

namespace {

/// Runs a shell command; its stdout (stderr is dropped).
std::string capture(const std::string& cmd) {
  return shell_output(cmd + " 2>/dev/null");
}

/// Chromium, headless, with time to poll the daemon a few times.
std::string chromium(const std::string& args, const std::string& url) {
  return capture("timeout 60 chromium --headless=new --no-sandbox "
                 "--disable-gpu --hide-scrollbars --window-size=1280,800 "
                 "--virtual-time-budget=6000 " +
                 args + " '" + url + "'");
}

/// How often `needle` occurs in `hay`.
size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos;
       at = hay.find(needle, at + 1))
    ++n;
  return n;
}

/// The test session's audit records of `op`, every one of them.
json::array audit_of(http_client& c, const std::string& op) {
  return expect_ok(c.rpc("audit.list", with(ids("console-agent", "console-s"),
                                            {{"op", op}, {"limit", 1000}})))
      .at("events")
      .as_array();
}

/// The record for run `run` among `events`, or null.
const json::object* run_event(const json::array& events,
                              const std::string& run) {
  for (const auto& e : events)
    if (e.as_object().at("run_id") == json::value(run))
      return &e.as_object();
  return nullptr;
}

} // namespace

TEST_CASE("console: a run's row carries its argv, and its start and end are "
          "in the audit trail") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("console-agent", "console-s")));
  json::array argv{"sh", "-c", "echo it ran; exit 3"};
  auto started = start(c, "console-agent", "console-s", argv);
  CHECK(started.at("argv") == json::value(argv));
  auto run = run_id(started);
  auto done = wait_done(c, "console-agent", "console-s", run);
  CHECK(done.at("state") == "completed");
  CHECK(done.at("argv") == json::value(argv));
  // In wire order: right after the limits.
  std::vector<std::string> keys;
  for (const auto& kv : done)
    keys.emplace_back(kv.key());
  auto limits = std::find(keys.begin(), keys.end(), "limits");
  REQUIRE(limits != keys.end());
  REQUIRE(limits + 1 != keys.end());
  CHECK(*(limits + 1) == "argv");
  // The catalog's row, which process.list pages (and the console reads).
  auto page =
      expect_ok(c.rpc("process.list", with(ids("console-agent", "console-s"),
                                           {{"limit", 10}})));
  REQUIRE(page.at("runs").as_array().size() == 1);
  CHECK(page.at("runs").as_array()[0].as_object().at("argv") ==
        json::value(argv));
  // A run stopped on request ends in the trail as stopped.
  auto live = run_id(sh(c, "console-agent", "console-s", "sleep 30"));
  auto stopped =
      expect_ok(c.rpc("process.stop", with(ids("console-agent", "console-s"),
                                           {{"run_id", live}})));
  CHECK(stopped.at("state") == "stopped");
  auto starts = audit_of(c, "process.start");
  CHECK(starts.size() == 2);
  auto* first_start = run_event(starts, run);
  REQUIRE(first_start);
  CHECK(first_start->at("argv") == json::value(argv));
  CHECK(first_start->at("agent_id") == "console-agent");
  CHECK(first_start->at("session_id") == "console-s");
  auto* live_start = run_event(starts, live);
  REQUIRE(live_start);
  CHECK(live_start->at("argv") ==
        json::value(json::array{"sh", "-c", "sleep 30"}));
  // The end is committed with the final row, after the reply: poll briefly.
  json::array ends;
  for (int i = 0; i < 250; ++i) {
    ends = audit_of(c, "process.end");
    if (ends.size() >= 2)
      break;
    ::usleep(20000);
  }
  REQUIRE(ends.size() == 2);
  auto* first_end = run_event(ends, run);
  REQUIRE(first_end);
  CHECK(first_end->at("state") == "completed");
  CHECK(first_end->at("exit_code") == 3);
  CHECK(first_end->at("agent_id") == "console-agent");
  CHECK(first_end->at("session_id") == "console-s");
  auto* live_end = run_event(ends, live);
  REQUIRE(live_end);
  CHECK(live_end->at("state") == "stopped");
  CHECK(live_end->contains("exit_code"));
  // A run's start comes before its end.
  CHECK(first_start->at("cursor").to_number<int64_t>() <
        first_end->at("cursor").to_number<int64_t>());
}

TEST_CASE("console: the page shows the daemon's actors, sessions, runs and "
          "audit in Chromium") {
  // Tracked runs, so that the diff view names who wrote each change.
  auto opts = with_execution({"--process-tracking", "ebpf"});
  opts.token = "tok";
  daemon_process d{opts};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("console-agent", "console-s")));
  auto write = [&c](const std::string& path) {
    expect_ok(c.rpc("file.write", with(ids("console-agent", "console-s"),
                                       {{"path", path}, {"data", path}})));
  };
  write("notes.txt");
  auto first = expect_ok(
      c.rpc("checkpoint.create",
            with(ids("console-agent", "console-s"), {{"message", "first"}})));
  write("second.txt");
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("console-agent", "console-s"),
                       {{"message", "second"}, {"pinned", true}})));
  // A branch: roll back to the first and checkpoint again.
  expect_ok(c.rpc("session.rollback",
                  with(ids("console-agent", "console-s"),
                       {{"checkpoint_id", first.at("checkpoint_id")}})));
  // A finished run, which leaves more changes than one page of a diff.
  auto many = run_id(sh(c, "console-agent", "console-s",
                        "mkdir many && for i in $(seq 1 150); do "
                        "echo $i > many/f$i; done"));
  CHECK(wait_done(c, "console-agent", "console-s", many).at("state") ==
        "completed");
  write("branch.txt");
  auto branch = expect_ok(
      c.rpc("checkpoint.create",
            with(ids("console-agent", "console-s"), {{"message", "branch"}})));
  auto first_id = std::string{first.at("checkpoint_id").as_string()};
  auto branch_id = std::string{branch.at("checkpoint_id").as_string()};
  auto branch_diff = expect_ok(
      c.rpc("checkpoint.diff", with(ids("console-agent", "console-s"),
                                    {{"from", first_id}, {"to", branch_id}})));
  auto added = branch_diff.at("counts").at("added").to_number<int64_t>();
  REQUIRE(added > 100);
  auto run = run_id(sh(c, "console-agent", "console-s",
                       "echo console-output-line; sleep 30"));
  // The page itself is open; its data needs the token (the fragment).
  http_client anonymous{"127.0.0.1", d.port()};
  auto page = anonymous.request("GET", "/ui");
  REQUIRE(page.status == 200);
  CHECK(page.headers["Content-Type"].find("text/html") == 0);
  CHECK(anonymous.rpc("system.dump").status == 401);
  auto url = "http://127.0.0.1:" + std::to_string(d.port()) + "/ui#token=tok";
  auto dom = chromium("--dump-dom", url);
  INFO(dom.substr(0, 2000));
  CHECK(dom.find("data-ready=\"true\"") != std::string::npos);
  CHECK(dom.find("<option value=\"console-agent/console-s\"") !=
        std::string::npos);
  CHECK(dom.find("data-kind=\"session\"") != std::string::npos);
  // The session's usage from its cgroup (CPU time: no controller needed).
  CHECK(dom.find("<span data-usage=\"cpu\">usage: CPU ") != std::string::npos);
  // Three checkpoints in the graph, the head among them.
  size_t circles = 0;
  for (size_t at = dom.find("data-checkpoint="); at != std::string::npos;
       at = dom.find("data-checkpoint=", at + 1))
    ++circles;
  CHECK(circles == 3);
  CHECK(dom.find("(head)") != std::string::npos);
  // Labelled by the ends of their ids (cp-<ns> ids begin alike).
  CHECK(dom.find("…" + branch_id.substr(branch_id.size() - 8) + " (head)") !=
        std::string::npos);
  CHECK(dom.find("data-run=\"" + run + "\"") != std::string::npos);
  CHECK(dom.find("console-output-line") != std::string::npos);
  CHECK(dom.find("session.rollback") != std::string::npos);
  // Each run's argv, beside its exit code once it has one.
  CHECK(dom.find(">sh -c 'echo console-output-line; sleep 30'</code>") !=
        std::string::npos);
  CHECK(dom.find(">sh -c 'mkdir many &amp;&amp; for i in $(seq 1 150); do "
                 "echo $i &gt; many/f$i; done'</code>") != std::string::npos);
  CHECK(dom.find("exit 0</span>") != std::string::npos);
  // The runs in the audit list, with what they ran and how they ended.
  CHECK(dom.find("data-op=\"process.start\"") != std::string::npos);
  CHECK(dom.find("data-op=\"process.end\"") != std::string::npos);
  CHECK(dom.find("run " + run.substr(0, 8) +
                 ": sh -c 'echo console-output-line; sleep 30'") !=
        std::string::npos);
  CHECK(dom.find("run " + many.substr(0, 8) + " completed, exit 0") !=
        std::string::npos);
  // No checkpoint is open yet.
  CHECK(dom.find("data-diff-to=") == std::string::npos);

  // A click on the branch's checkpoint (the address names it, and the page
  // clicks its node once drawn): its diff against its parent, the first,
  // one page of it and a button for the next.
  auto opened = chromium("--dump-dom", url + "&checkpoint=" + branch_id);
  INFO(opened.substr(0, 2000));
  CHECK(opened.find("data-diff-to=\"" + branch_id + "\"") != std::string::npos);
  CHECK(opened.find("data-diff-from=\"" + first_id + "\"") !=
        std::string::npos);
  CHECK(opened.find("<tr data-change=\"added\" data-path=\"branch.txt\">") !=
        std::string::npos);
  CHECK(opened.find("data-path=\"many/f1\"") != std::string::npos);
  // Who wrote each: the daemon serving file.write, a run's shell.
  CHECK(opened.find("data-writers=\"allox-control-plane:file.write write\"") !=
        std::string::npos);
  CHECK(opened.find("data-writers=\"" + many + "/") != std::string::npos);
  // Against its parent: neither the other branch's file nor the parent's.
  CHECK(opened.find("data-path=\"second.txt\"") == std::string::npos);
  CHECK(opened.find("data-path=\"notes.txt\"") == std::string::npos);
  CHECK(count(opened, "data-path=") == 100);
  CHECK(opened.find(": " + std::to_string(added) + " added") !=
        std::string::npos);
  CHECK(opened.find("next 100 changes</button>") != std::string::npos);
  // The open checkpoint's node is ringed, and no other.
  CHECK(opened.find("stroke=\"#111827\" stroke-width=\"3\" data-checkpoint=\"" +
                    branch_id + "\"") != std::string::npos);
  CHECK(count(opened, "stroke=\"#111827\"") == 1);
  // The root has no parent to compare with.
  auto root = chromium("--dump-dom", url + "&checkpoint=" + first_id);
  INFO(root.substr(0, 2000));
  CHECK(root.find("data-diff-to=\"" + first_id + "\"") != std::string::npos);
  CHECK(root.find("data-diff-root=\"true\"") != std::string::npos);
  CHECK(root.find("data-path=") == std::string::npos);

  // The screenshot, kept in the build tree for people to look at: the
  // branched DAG with the branch's diff open.
  auto shot = std::string{ALLOX_TEST_ARTEFACTS} + "/console.png";
  std::remove(shot.c_str());
  chromium("--screenshot=" + shot, url + "&checkpoint=" + branch_id);
  auto png = read_file(shot);
  REQUIRE(png.size() > 10000);
  CHECK(png.compare(1, 3, "PNG") == 0);
  expect_ok(c.rpc("process.stop",
                  with(ids("console-agent", "console-s"), {{"run_id", run}})));
}
