// SPDX-License-Identifier: Apache-2.0
// Restarts, crashes, supervision, isolation of slow work, operator dumps
// and clean shutdown.
#include "tests/fixtures/bulk_client.hpp"
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/session_files.hpp"

#include "guest/os/fs.hpp"
#include "guest/os/loop_mount.hpp"
#include "guest/os/mountinfo.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <functional>
#include <future>
#include <thread>
#include <unistd.h>

using namespace allox;
using namespace allox::test;

namespace {

bool mounted(const std::string& path) {
  auto mounts = os::read_mountinfo();
  for (const auto& m : *mounts)
    if (m.mount_point == path)
      return true;
  return false;
}

/// Retries while the answer is `conflict` (a session actor restarting).
http_response until_settled(const std::function<http_response()>& call) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  for (;;) {
    auto r = call();
    bool conflict = r.json.is_object() && r.json.as_object().contains("code") &&
                    r.json.as_object().at("code") == "conflict";
    if (!conflict || std::chrono::steady_clock::now() > deadline)
      return r;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
}

} // namespace

TEST_CASE("lifecycle: state survives a clean restart - SIGTERM unmounts and "
          "detaches") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s1")));
  expect_ok(c.rpc("session.create", ids("b", "s2")));
  CHECK(d.stop(SIGTERM) == 0);
  CHECK_FALSE(mounted(d.root()));
  CHECK(os::loop_device_for(d.image()).empty());
  d.start();
  expect_ok(c.rpc("session.describe", ids("a", "s1")));
  expect_ok(c.rpc("session.describe", ids("b", "s2")));
  CHECK(expect_ok(c.rpc("agent.list")).at("agent_ids") ==
        json::array{"a", "b"});
  CHECK(d.log().find("store unmounted") != std::string::npos);
}

TEST_CASE("lifecycle: the embedded store's loop device does direct I/O and "
          "its metadata is kept once") {
  daemon_process d;
  d.start();
  auto dev = os::loop_device_for(d.image());
  REQUIRE_FALSE(dev.empty());
  auto sys = "/sys/block/" + dev.substr(dev.rfind('/') + 1) + "/loop/dio";
  CHECK(read_file(sys) == "1\n");
  auto out = shell_output("btrfs filesystem df " + d.root());
  CHECK(out.find("Metadata, single") != std::string::npos);
  CHECK(out.find("DUP") == std::string::npos);
}

TEST_CASE("lifecycle: after SIGKILL the daemon adopts its mount and "
          "restarts consistent") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s1")));
  d.crash();
  CHECK(mounted(d.root()));
  d.start();
  expect_ok(c.rpc("session.describe", ids("a", "s1")));
  CHECK(d.log().find("(adopted)") != std::string::npos);
}

TEST_CASE("lifecycle: a crash between subvolume and catalog row is adopted "
          "at start-up") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  if (!fault_injection_built(c))
    return; // release build: fault points are compiled out
  expect_ok(
      c.rpc("debug.fault",
            fault("probe", "", "session.create.after_subvolume", "crash")));
  c.try_rpc("session.create", ids("probe", "half"));
  CHECK(d.wait_exit(std::chrono::seconds{10}) == 128 + SIGKILL);
  d.start();
  auto desc = expect_ok(c.rpc("session.describe", ids("probe", "half")));
  CHECK(desc.at("relative_workspace") ==
        "agents/probe/workspace/sessions/half/current");
  CHECK(::access((d.current("probe", "half") + "/.allox-tmp").c_str(), F_OK) ==
        0);
  auto ops = audit_ops(c, ids("probe", "half"));
  CHECK(ops == std::vector<std::string>{"session.adopt"});
}

TEST_CASE("lifecycle: a crash during session.delete is finished at start-up") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  if (!fault_injection_built(c))
    return;
  for (auto point :
       {"session.delete.before_rename", "session.delete.after_rename"}) {
    CAPTURE(point);
    expect_ok(c.rpc("session.create", ids("probe", "gone")));
    expect_ok(c.rpc("debug.fault", fault("probe", "gone", point, "crash")));
    c.try_rpc("session.delete", ids("probe", "gone"));
    CHECK(d.wait_exit(std::chrono::seconds{10}) == 128 + SIGKILL);
    d.start();
    expect_error(c.rpc("session.describe", ids("probe", "gone")), 400,
                 "not_found");
    CHECK(::access((d.root() + "/agents/probe/workspace/sessions/gone").c_str(),
                   F_OK) != 0);
    auto ops = audit_ops(c, {{"agent_id", "probe"},
                             {"session_id", "gone"},
                             {"op", "session.delete"}});
    CHECK_FALSE(ops.empty());
  }
  // No trash left behind.
  auto names = os::list_dir(d.root() + "/agents/probe/workspace/sessions");
  REQUIRE(names);
  CHECK(names->empty());
  CHECK(expect_ok(c.rpc("session.list", ids("probe"))).at("session_ids") ==
        json::array{});
}

TEST_CASE("lifecycle: a failing session actor is restarted - its caller gets "
          "an error, never a hang") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  if (!fault_injection_built(c))
    return;
  expect_ok(c.rpc("session.create", ids("probe", "s")));
  expect_ok(
      c.rpc("debug.fault", fault("probe", "s", "session.describe", "throw")));
  auto failed = c.rpc("session.describe", ids("probe", "s"));
  expect_error(failed, 500, "internal");
  // The restart does not hide the cause: the log names actor, action and
  // exception.
  CHECK(d.log().find("session probe/s failed in session.describe: "
                     "injected fault at session.describe") !=
        std::string::npos);
  // The replacement actor serves as soon as its rows are reloaded.
  expect_ok(until_settled(
      [&] { return c.rpc("session.describe", ids("probe", "s")); }));
  auto ops = audit_ops(c, {{"op", "session.actor_failed"}});
  CHECK(ops.size() == 1);
  auto dump = expect_ok(c.rpc("system.dump"));
  auto text = json::serialize(dump);
  CHECK(text.find(R"("restarts":1)") != std::string::npos);
}

TEST_CASE("lifecycle: a session that keeps failing is stopped and shows as "
          "failed") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  if (!fault_injection_built(c))
    return;
  expect_ok(c.rpc("session.create", ids("probe", "s")));
  for (int i = 0; i < 6; ++i) {
    expect_ok(until_settled([&] {
      return c.rpc("debug.fault",
                   fault("probe", "s", "session.describe", "throw"));
    }));
    expect_error(c.rpc("session.describe", ids("probe", "s")), 500, "internal");
  }
  auto stopped = until_settled(
      [&] { return c.rpc("session.describe", ids("probe", "s")); });
  expect_error(stopped, 500, "internal");
  auto text = json::serialize(expect_ok(c.rpc("system.dump")));
  CHECK(text.find(R"("state":"failed")") != std::string::npos);
  // Other sessions are unaffected.
  expect_ok(c.rpc("session.create", ids("probe", "ok")));
}

TEST_CASE("lifecycle: slow work in one session never stalls another") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  if (!fault_injection_built(c))
    return;
  expect_ok(c.rpc("session.create", ids("probe", "slow")));
  expect_ok(c.rpc("session.create", ids("probe", "fast")));
  expect_ok(c.rpc("session.create", ids("other", "fast")));
  expect_ok(c.rpc(
      "debug.fault",
      fault("probe", "slow", "session.delete.before_rename", "delay", 2000)));
  auto slow_client = d.new_client();
  auto started = std::chrono::steady_clock::now();
  auto slow = std::async(std::launch::async, [&] {
    return slow_client->rpc("session.delete", ids("probe", "slow"));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds{100});
  std::chrono::steady_clock::duration worst{};
  int served = 0;
  while (slow.wait_for(std::chrono::milliseconds{0}) !=
         std::future_status::ready) {
    for (auto* who : {"probe", "other"}) {
      auto t0 = std::chrono::steady_clock::now();
      expect_ok(c.rpc("session.describe", ids(who, "fast")));
      worst = std::max(worst, std::chrono::steady_clock::now() - t0);
      ++served;
    }
    // The session being deleted still answers at once while its slow step
    // runs (afterwards it is gone: not_found).
    auto t1 = std::chrono::steady_clock::now();
    auto busy = c.rpc("session.describe", ids("probe", "slow"));
    CHECK(std::chrono::steady_clock::now() - t1 <
          std::chrono::milliseconds{250});
    if (t1 - started < std::chrono::milliseconds{1800}) {
      INFO(busy.body);
      CHECK(busy.status == 200);
    }
  }
  auto elapsed = std::chrono::steady_clock::now() - started;
  expect_ok(slow.get());
  CHECK(elapsed >= std::chrono::milliseconds{1900});
  CHECK(served > 20);
  CHECK(worst < std::chrono::milliseconds{250});
  // The agent stays responsive while it creates a session slowly, too.
  expect_ok(
      c.rpc("debug.fault", fault("probe", "", "session.create.before_subvolume",
                                 "delay", 1500)));
  auto creating = std::async(std::launch::async, [&] {
    return slow_client->rpc("session.create", ids("probe", "late"));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds{200});
  auto t0 = std::chrono::steady_clock::now();
  expect_ok(c.rpc("session.list", ids("probe")));
  expect_ok(c.rpc("session.describe", ids("probe", "fast")));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds{250});
  CHECK(creating.wait_for(std::chrono::milliseconds{0}) !=
        std::future_status::ready);
  expect_ok(creating.get());
}

TEST_CASE("lifecycle: system.dump shows the live actor tree") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s1")));
  expect_ok(c.rpc("session.describe", ids("a", "s1")));
  auto dump = expect_ok(c.rpc("system.dump"));
  CHECK(dump.at("daemon").as_object().at("pid").as_int64() > 0);
  auto& tree = dump.at("tree").as_object();
  CHECK(tree.at("kind") == "supervisor");
  auto* session = dump_node(tree, "session");
  auto kinds = dump_kinds(tree);
  for (auto k : {"supervisor", "metadata", "rpc", "agents", "agent", "session"})
    CHECK(std::find(kinds.begin(), kinds.end(), k) != kinds.end());
  REQUIRE(session != nullptr);
  CHECK(session->at("agent_id") == "a");
  CHECK(session->at("session_id") == "s1");
  CHECK(session->at("state") == "idle");
  CHECK(session->at("mailbox").is_number());
  CHECK(session->at("uptime_ms").is_number());
  CHECK(session->at("resources").as_object().at("subvolume") ==
        json::value(d.current("a", "s1")));
  CHECK(
      session->at("counters").as_object().at("requests").to_number<int64_t>() >=
      1);
}

TEST_CASE("lifecycle: SIGUSR1 writes the dump to the log") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s1")));
  // The fixture's pid is private; find ours through the dump.
  auto dump = expect_ok(d.client().rpc("system.dump"));
  auto pid =
      static_cast<pid_t>(dump.at("daemon").as_object().at("pid").as_int64());
  ::kill(pid, SIGUSR1);
  for (int i = 0; i < 100 && d.log().find("dump: {") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  auto log = d.log();
  CHECK(log.find("dump: {") != std::string::npos);
  CHECK(log.find(R"("session_id":"s1")") != std::string::npos);
}

TEST_CASE("lifecycle: many sessions created concurrently") {
  daemon_process d;
  d.start();
  std::vector<std::future<int>> jobs;
  for (int t = 0; t < 8; ++t)
    jobs.push_back(std::async(std::launch::async, [&d, t] {
      auto c = d.new_client();
      int ok = 0;
      for (int i = 0; i < 10; ++i) {
        auto r = c->rpc("session.create",
                        ids("a" + std::to_string(t % 3),
                            "s" + std::to_string(t) + "-" + std::to_string(i)));
        ok += r.status == 200;
      }
      return ok;
    }));
  int total = 0;
  for (auto& j : jobs)
    total += j.get();
  CHECK(total == 80);
  int listed = 0;
  for (int a = 0; a < 3; ++a)
    listed += static_cast<int>(
        expect_ok(d.client().rpc("session.list", ids("a" + std::to_string(a))))
            .at("session_ids")
            .as_array()
            .size());
  CHECK(listed == 80);
}

TEST_CASE("lifecycle: a start-up failure after mounting still unmounts") {
  test::temp_dir dir;
  // Occupy the port so listening fails after the store is mounted.
  int busy = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(busy, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(::listen(busy, 1) == 0);
  socklen_t len = sizeof(addr);
  ::getsockname(busy, reinterpret_cast<sockaddr*>(&addr), &len);
  auto [code, out] =
      run_daemon({"--root", dir / "store", "--loop-image", dir / "store.img",
                  "--loop-size", "1G", "--listen",
                  "127.0.0.1:" + std::to_string(ntohs(addr.sin_port))});
  ::close(busy);
  CHECK(code == 1);
  CHECK(out.find("cannot listen") != std::string::npos);
  CHECK(out.find("store unmounted") != std::string::npos);
  CHECK_FALSE(mounted(dir / "store"));
  CHECK(os::loop_device_for(dir / "store.img").empty());
}
