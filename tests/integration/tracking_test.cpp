// SPDX-License-Identifier: Apache-2.0
// Process tracking with the eBPF probe, through the daemon, on the real
// kernel: what runs record (process.events, process.tree, the process
// map), attribution across sessions and process shapes, timeouts and
// rollbacks, and the TRACKER's failures (loss, reader, loader).
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/raw_socket.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/temp_dir.hpp"
#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace allox;
using namespace allox::test;

namespace {

daemon_options tracked(std::vector<std::string> more = {}) {
  std::vector<std::string> args{"--process-tracking", "ebpf"};
  args.insert(args.end(), more.begin(), more.end());
  return with_execution(std::move(args));
}

/// Every event of a run, following next_after.
std::vector<json::object> all_events(http_client& c, const std::string& a,
                                     const std::string& s,
                                     const std::string& id) {
  std::vector<json::object> out;
  int64_t after = 0;
  for (int pages = 0; pages < 1000; ++pages) {
    auto page = expect_ok(c.rpc(
        "process.events",
        with(ids(a, s), {{"run_id", id}, {"after", after}, {"limit", 100}})));
    for (const auto& e : page.at("events").as_array())
      out.push_back(e.as_object());
    after = page.at("next_after").as_int64();
    if (!page.at("has_more").as_bool())
      break;
  }
  return out;
}

bool ends_with(const json::value& v, const std::string& suffix) {
  if (!v.is_string())
    return false;
  std::string s{v.as_string()};
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

size_t count_execs(const std::vector<json::object>& events,
                   const std::string& suffix) {
  return static_cast<size_t>(
      std::count_if(events.begin(), events.end(), [&](const json::object& e) {
        return e.at("event") == "exec" && ends_with(e.at("filename"), suffix);
      }));
}

/// Every process in the run's map has exited.
bool all_exited(const json::object& row) {
  for (const auto& kv : row.at("processes").as_object())
    if (kv.value().as_object().at("alive") != json::value(false))
      return false;
  return !row.at("processes").as_object().empty();
}

/// Copies a file into the session's workspace (seen as /workspace/name).
void install(daemon_process& d, const std::string& a, const std::string& s,
             const std::string& from, const std::string& name) {
  auto to = d.current(a, s) + "/" + name;
  std::ifstream in{from, std::ios::binary};
  std::ofstream out{to, std::ios::binary};
  out << in.rdbuf();
  out.close();
  ::chmod(to.c_str(), 0755);
}

/// One Server-Sent Event: its name, data and id lines.
struct sse_event {
  std::string event, data, id;
};

/// The events in a stream's bytes (after the response head).
std::vector<sse_event> parse_sse(const std::string& bytes) {
  std::vector<sse_event> out;
  auto body = bytes.find("\r\n\r\n");
  size_t at = body == std::string::npos ? 0 : body + 4;
  while (at < bytes.size()) {
    auto end = bytes.find("\n\n", at);
    if (end == std::string::npos)
      break;
    sse_event e;
    for (size_t line = at; line < end;) {
      auto nl = std::min(bytes.find('\n', line), end);
      auto text = bytes.substr(line, nl - line);
      for (auto [key, field] : {std::pair{"event: ", &e.event},
                                {"data: ", &e.data},
                                {"id: ", &e.id}})
        if (text.rfind(key, 0) == 0)
          *field = text.substr(std::string{key}.size());
      line = nl + 1;
    }
    if (!e.event.empty())
      out.push_back(std::move(e));
    at = end + 2;
  }
  return out;
}

std::vector<sse_event> of_kind(const std::vector<sse_event>& events,
                               const std::string& kind) {
  std::vector<sse_event> out;
  for (const auto& e : events)
    if (e.event == kind)
      out.push_back(e);
  return out;
}

json::object tracker_status(http_client& c) {
  return expect_ok(c.rpc("tracker.status", json::object{}));
}

} // namespace

TEST_CASE("tracking: 40 background forks and a shell exec, all with their "
          "exits") {
  daemon_process d{tracked()};
  d.start();
  auto& c = d.client();
  auto st = expect_ok(c.rpc("process.status", json::object{}));
  CHECK(st.at("enabled") == json::value(true));
  CHECK(st.at("backend") == "ebpf");
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto started = sh(c, "a", "s",
                    "for i in $(seq 40); do /bin/sleep 0.05 & done; wait; "
                    "exec /bin/true");
  CHECK(started.at("backend") == "ebpf");
  CHECK(started.at("cookie").as_int64() > 0);
  auto id = run_id(started);
  auto row = wait_done(c, "a", "s", id);
  CHECK(row.at("state") == "completed");
  CHECK(row.at("trace_complete") == json::value(true));
  CHECK(row.at("events_lost") == json::value(0));
  CHECK(all_exited(row));
  auto events = all_events(c, "a", "s", id);
  CHECK(row.at("event_count").as_int64() ==
        static_cast<int64_t>(events.size()));
  CHECK(count_execs(events, "/bin/sleep") == 40);
  CHECK(count_execs(events, "/bin/true") == 1);
  // Every sleep's exit, with code 0; sequence numbers 1..n with no gap.
  std::set<std::string> sleepers;
  for (const auto& e : events)
    if (e.at("event") == "exec" && ends_with(e.at("filename"), "/bin/sleep"))
      sleepers.insert(std::string{e.at("process_id").as_string()});
  size_t exits = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    CHECK(e.at("seq").as_int64() == static_cast<int64_t>(i + 1));
    CHECK(e.at("run_id") == json::value(id));
    CHECK(e.at("session_id") == "s");
    if (e.at("event") == "exit" &&
        sleepers.count(std::string{e.at("process_id").as_string()})) {
      ++exits;
      CHECK(e.at("exit_code") == json::value(0));
    }
  }
  CHECK(exits == 40);
  // The nested tree: one root, the shell's 40 children below it.
  auto tree =
      expect_ok(c.rpc("process.tree", with(ids("a", "s"), {{"run_id", id}})));
  CHECK(tree.at("trace_complete") == json::value(true));
  REQUIRE(tree.at("tree").as_array().size() == 1);
  size_t in_tree = 0;
  std::function<void(const json::object&)> walk = [&](const json::object& n) {
    ++in_tree;
    CHECK(n.at("alive") == json::value(false));
    for (const auto& k : n.at("children").as_array())
      walk(k.as_object());
  };
  walk(tree.at("tree").as_array()[0].as_object());
  CHECK(in_tree == row.at("processes").as_object().size());
  // The TRACKER's view, and the dump.
  auto ts = tracker_status(c);
  CHECK(ts.at("backend") == "ebpf");
  CHECK(ts.at("ready") == json::value(true));
  CHECK(ts.at("events_received").as_int64() >=
        static_cast<int64_t>(events.size()));
  CHECK(ts.at("events_lost").at("total") == json::value(0));
  auto dump = expect_ok(c.rpc("system.dump", json::object{}));
  CHECK(json::serialize(dump).find("\"kind\":\"tracker\"") !=
        std::string::npos);
  // And the metrics, under their own names.
  auto metrics = c.request("GET", "/metrics").body;
  CHECK(metrics.find("allox_tracker_events_received_total " +
                     std::to_string(ts.at("events_received").as_int64())) !=
        std::string::npos);
  CHECK(metrics.find("allox_tracker_events_lost_total{cause=") !=
        std::string::npos);
}

TEST_CASE("tracking: a thread that execs keeps its identity, and a double fork "
          "with setsid and no environment is still attributed") {
  daemon_process d{tracked()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  install(d, "a", "s", ALLOX_TRACKING_HELPER_PATH, "helper");

  auto id = run_id(
      start(c, "a", "s",
            json::array{"/workspace/helper", "thread-exec", "/bin/true"}));
  auto row = wait_done(c, "a", "s", id);
  CHECK(row.at("trace_complete") == json::value(true));
  auto events = all_events(c, "a", "s", id);
  const json::object* helper = nullptr;
  const json::object* from_thread = nullptr;
  for (const auto& e : events) {
    if (e.at("event") != "exec")
      continue;
    if (ends_with(e.at("filename"), "/workspace/helper"))
      helper = &e;
    if (ends_with(e.at("filename"), "/bin/true"))
      from_thread = &e;
  }
  REQUIRE(helper != nullptr);
  REQUIRE(from_thread != nullptr);
  CHECK(from_thread->at("process_id") == helper->at("process_id"));
  CHECK(from_thread->at("pid") == helper->at("pid"));
  CHECK(from_thread->at("tid") != from_thread->at("pid"));
  auto& p = row.at("processes")
                .as_object()
                .at(helper->at("process_id").as_string())
                .as_object();
  REQUIRE(p.at("filenames").as_array().size() == 2);
  CHECK(ends_with(p.at("filenames").as_array()[1], "/bin/true"));

  auto id2 = run_id(start(
      c, "a", "s",
      json::array{"/workspace/helper", "double-fork", "/bin/sleep", "0.3"}));
  auto row2 = wait_done(c, "a", "s", id2);
  CHECK(row2.at("trace_complete") == json::value(true));
  auto events2 = all_events(c, "a", "s", id2);
  CHECK(count_execs(events2, "/bin/sleep") == 1);
  for (const auto& e : events2)
    if (e.at("event") == "exec" && ends_with(e.at("filename"), "/bin/sleep"))
      CHECK(row2.at("processes")
                .as_object()
                .at(e.at("process_id").as_string())
                .at("exit_code") == json::value(0));
}

TEST_CASE("tracking: three parallel sessions each see exactly their own "
          "execs") {
  daemon_process d{tracked()};
  d.start();
  auto& c = d.client();
  std::vector<std::string> sessions{"s1", "s2", "s3"};
  for (const auto& s : sessions) {
    expect_ok(c.rpc("session.create", ids("a", s)));
    install(d, "a", s, "/bin/true", "marker-" + s);
  }
  std::vector<std::string> runs;
  for (const auto& s : sessions)
    runs.push_back(
        run_id(sh(c, "a", s,
                  "for i in $(seq 20); do /workspace/marker-" + s + "; done")));
  for (size_t i = 0; i < sessions.size(); ++i) {
    auto row = wait_done(c, "a", sessions[i], runs[i]);
    CHECK(row.at("trace_complete") == json::value(true));
    auto events = all_events(c, "a", sessions[i], runs[i]);
    for (const auto& other : sessions)
      CHECK(count_execs(events, "/marker-" + other) ==
            (other == sessions[i] ? 20u : 0u));
  }
}

TEST_CASE("tracking: a run stopped by its 0.2 s timeout has a complete "
          "trace") {
  daemon_process d{tracked()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto id = run_id(
      sh(c, "a", "s", "/bin/sleep 30 & /bin/sleep 30", {{"timeout", 0.2}}));
  auto row = wait_done(c, "a", "s", id);
  CHECK(row.at("state") == "stopped");
  CHECK(row.at("stop_reason") == "timeout");
  CHECK(row.at("trace_complete") == json::value(true));
  CHECK(all_exited(row));
  auto events = all_events(c, "a", "s", id);
  size_t killed = 0;
  for (const auto& e : events)
    if (e.at("event") == "exit" && e.at("signal") == json::value(9))
      ++killed;
  CHECK(killed >= 2);
}

TEST_CASE("tracking: a live stream carries every process event before its "
          "end, and resumes after any of them") {
  daemon_process d{tracked()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto id = run_id(
      sh(c, "a", "s", "sleep 0.3; /bin/true; /bin/true; echo out; /bin/true"));
  auto request = "GET /v1/stream?agent_id=a&session_id=s&run_id=" + id +
                 " HTTP/1.1\r\nHost: x\r\n";
  raw_socket live{d.port()};
  REQUIRE(live.send_all(request + "\r\n"));
  auto events = parse_sse(live.read_until_closed(std::chrono::seconds{10}));
  auto row = wait_done(c, "a", "s", id);
  REQUIRE(row.at("trace_complete") == json::value(true));
  auto process = of_kind(events, "process");
  // Everything the run recorded, in order, and only then the end.
  REQUIRE(static_cast<int64_t>(process.size()) ==
          row.at("event_count").as_int64());
  REQUIRE(process.size() >= 8);
  for (size_t i = 0; i < process.size(); ++i) {
    auto e = json::parse(process[i].data).as_object();
    CHECK(e.at("seq").as_int64() == static_cast<int64_t>(i + 1));
    CHECK(e.at("run_id") == json::value(id));
  }
  REQUIRE_FALSE(events.empty());
  CHECK(events.back().event == "end");
  CHECK(events.back().data == R"({"state":"completed"})");
  // A tracked run's ids have a third part: the bytes of its events sent.
  CHECK(std::count(process[0].id.begin(), process[0].id.end(), '-') == 2);
  // Resuming after the third event sends the rest once, and no output
  // that came before it.
  raw_socket again{d.port()};
  REQUIRE(
      again.send_all(request + "Last-Event-ID: " + process[2].id + "\r\n\r\n"));
  auto resumed = parse_sse(again.read_until_closed(std::chrono::seconds{10}));
  auto rest = of_kind(resumed, "process");
  REQUIRE(rest.size() == process.size() - 3);
  CHECK(json::parse(rest.front().data).at("seq").as_int64() == 4);
  auto out_before = process[2].id.substr(0, process[2].id.find('-'));
  if (out_before != "0")
    CHECK(of_kind(resumed, "stdout").empty());
  CHECK(resumed.back().event == "end");
}

TEST_CASE("tracking: rollback with kill_processes leaves a complete trace") {
  daemon_process d{tracked()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto cp = expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  auto id = run_id(sh(c, "a", "s", "/bin/sleep 30 & /bin/sleep 30"));
  expect_ok(
      c.rpc("session.rollback",
            with(ids("a", "s"), {{"checkpoint_id", cp.at("checkpoint_id")},
                                 {"kill_processes", true}})));
  auto row =
      expect_ok(c.rpc("process.get", with(ids("a", "s"), {{"run_id", id}})));
  CHECK(row.at("state") == "stopped");
  CHECK(row.at("trace_complete") == json::value(true));
  CHECK(all_exited(row));
}

TEST_CASE("tracking: a process started outside any session is never "
          "attributed") {
  daemon_process d{tracked()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto id = run_id(sh(c, "a", "s", "/bin/sleep 0.5"));
  std::set<int64_t> outside;
  for (int i = 0; i < 5; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::execl("/usr/bin/env", "env", "true", nullptr);
      ::_exit(127);
    }
    outside.insert(pid);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  auto row = wait_done(c, "a", "s", id);
  CHECK(row.at("trace_complete") == json::value(true));
  for (const auto& e : all_events(c, "a", "s", id)) {
    if (const auto* f = e.if_contains("filename"))
      CHECK_FALSE(ends_with(*f, "/usr/bin/env"));
    CHECK(outside.count(e.at("pid").as_int64()) == 0);
  }
}

TEST_CASE("tracking: the reader fails mid-run: the run fails and fences the "
          "session, and the tracker comes back and the next run is complete") {
  daemon_process d{tracked()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto id = run_id(sh(c, "a", "s", "/bin/sleep 1"));
  // The next load fails too: the TRACKER backs off and tries again.
  expect_ok(c.rpc("debug.fault",
                  with(ids("a", "s"), {{"point", "tracking.probe.load"},
                                       {"effect", "throw"}})));
  expect_ok(c.rpc("debug.fault",
                  with(ids("a", "s"), {{"point", "tracking.reader.poll"},
                                       {"effect", "throw"}})));
  auto row = wait_done(c, "a", "s", id);
  CHECK(row.at("state") == "failed");
  CHECK(row.at("trace_complete") == json::value(false));
  CHECK(row.at("session_fenced") == json::value(true));
  CHECK(row.at("stop_reason") == "provider_failure");
  CHECK_FALSE(row.at("provider_error").is_null());
  // The session is fenced until session.unfence.
  expect_error(c.rpc("process.start",
                     with(ids("a", "s"), {{"argv", json::array{"true"}}})),
               400, "conflict");
  REQUIRE(eventually(
      [&] { return tracker_status(c).at("ready") == json::value(true); },
      std::chrono::seconds{10}));
  auto ts = tracker_status(c);
  CHECK(ts.at("restarts").as_int64() >= 1);
  CHECK(ts.at("runs_failed").as_int64() >= 1);
  auto dump = json::serialize(expect_ok(c.rpc("system.dump", json::object{})));
  CHECK(dump.find("\"kind\":\"tracker\"") != std::string::npos);
  expect_ok(c.rpc("session.unfence", ids("a", "s")));
  auto next = run_id(sh(c, "a", "s", "/bin/true"));
  auto done = wait_done(c, "a", "s", next);
  CHECK(done.at("state") == "completed");
  CHECK(done.at("trace_complete") == json::value(true));
}

TEST_CASE("tracking: events lost in the kernel fail and fence the run") {
  // The smallest ring, and a reader that stalls: the kernel cannot keep
  // the run's records.
  daemon_process d{tracked({"--tracker-ring-bytes", "4096"})};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(c.rpc("debug.fault",
                  with(ids("a", "s"), {{"point", "tracking.reader.poll"},
                                       {"effect", "delay"},
                                       {"millis", 1500}})));
  auto id = run_id(sh(c, "a", "s", "for i in $(seq 200); do /bin/true; done"));
  auto row = wait_done(c, "a", "s", id);
  CHECK(row.at("state") == "failed");
  CHECK(row.at("trace_complete") == json::value(false));
  CHECK(row.at("session_fenced") == json::value(true));
  CHECK(row.at("events_lost").as_int64() > 0);
  auto ts = tracker_status(c);
  CHECK(ts.at("events_lost").at("total").as_int64() > 0);
}

TEST_CASE("tracking: the daemon refuses ebpf tracking without execution") {
  test::temp_dir dir;
  auto [code, out] =
      run_daemon({"--root", dir.path(), "--process-tracking", "ebpf",
                  "--listen", "127.0.0.1:" + std::to_string(free_port())});
  CHECK(code == 1);
  CHECK(out.find("--process-tracking ebpf needs --process-audit-root") !=
        std::string::npos);
}

TEST_CASE("tracking: the daemon does not start when a readiness check fails, "
          "and names it") {
  test::temp_dir dir;
  auto [code, out] = run_daemon(
      {"--root", dir / "store", "--loop-image", dir / "store.img",
       "--loop-size", "1G", "--listen",
       "127.0.0.1:" + std::to_string(free_port()), "--process-audit-root",
       dir / "runs", "--process-tracking", "ebpf", "--bwrap", dir / "no-bwrap"},
      std::chrono::seconds{30});
  CHECK(code == 1);
  CHECK(out.find("process tracking (ebpf) is not available on this guest: "
                 "bwrap: ") != std::string::npos);
  CHECK(out.find("store unmounted") != std::string::npos);
}
