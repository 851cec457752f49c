// SPDX-License-Identifier: Apache-2.0
// The E2B front driven by the real `e2b` npm package (version pinned in
// tests/fronts/e2b/sdk/package-lock.json, installed by scripts/test.sh):
// each case is one function of sdk_test.mjs, run with the SDK's two
// environment variables pointed at a daemon on a loop store.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/node_script.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <thread>

using namespace allox;
using namespace allox::test;

namespace {

/// Runs `node sdk_test.mjs <name>` against `d`; its exit code and output.
std::pair<int, std::string> run_case(const daemon_process& d,
                                     const std::string& name,
                                     const std::string& key = "e2b_test",
                                     const std::string& state = {}) {
  std::string dir = ALLOX_E2B_SDK_DIR;
  struct stat st {};
  REQUIRE_MESSAGE(::stat((dir + "/node_modules/e2b").c_str(), &st) == 0,
                  "the e2b SDK is not installed: npm ci --prefix " << dir);
  auto base = "http://127.0.0.1:" + std::to_string(d.port());
  auto env = "E2B_API_URL=" + base + "/e2b E2B_SANDBOX_URL=" + base +
             "/e2b/envd E2B_API_KEY=" + key + " ALLOX_RPC=" + base +
             "/v1/rpc ALLOX_STATE='" + state + "'";
  return run_node_case(dir, env, "sdk_test.mjs", name, 120);
}

void check_case(daemon_process& d, const std::string& name,
                const std::string& key = "e2b_test",
                const std::string& state = {}) {
  auto [code, out] = run_case(d, name, key, state);
  INFO(out);
  INFO(d.log());
  CHECK(code == 0);
  CHECK(out.find("ok " + name) != std::string::npos);
}

} // namespace

TEST_CASE("e2b sdk: sandboxes created, listed (filters, pages), described, "
          "extended, connected and killed") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "lifecycle");
}

TEST_CASE("e2b sdk: a sandbox past its timeout is killed") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "timeout");
}

TEST_CASE("e2b sdk: every commands call, and a PTY") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "commands");
}

TEST_CASE("e2b sdk: every files call, in the tree checkpoints and rollback "
          "see") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "files");
}

TEST_CASE("e2b sdk: a snapshot is a live checkpoint, a sandbox made from "
          "it or forked has its own tree") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "snapshots");
}

TEST_CASE("e2b sdk: pause freezes the sandbox's processes and checkpoints "
          "its files, connect resumes them, a timeout pauses a sandbox "
          "that asks for it") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "pause");
}

TEST_CASE("e2b sdk: metrics from the session's cgroup and workspace") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "metrics");
}

TEST_CASE("e2b sdk: a sandbox's ports by Host, HTTP and upgrades, in its "
          "network namespace") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "ports");
}

TEST_CASE("e2b sdk: internet access and egress rules are the session's "
          "network mode and proxy policy") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "network");
}

TEST_CASE("e2b sdk: signed file URLs read and write one path until they "
          "expire") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "signed");
}

TEST_CASE("e2b sdk: gzip uploads are inflated and downloads deflated on "
          "request") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "gzip");
}

TEST_CASE("e2b sdk: a full store refuses writes with 507 and loses "
          "nothing, and a huge declared upload is refused at once") {
  auto o = with_execution();
  o.loop_size = "320M";
  daemon_process d{o};
  d.start();
  check_case(d, "full");
}

TEST_CASE("e2b sdk: paths leaving the workspace are refused") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "escapes");
}

TEST_CASE("e2b sdk: the daemon's token as X-API-Key, the sandbox's access "
          "token on envd") {
  auto o = with_execution();
  o.token = "secret-token";
  daemon_process d{o};
  d.start();
  check_case(d, "auth", "secret-token");
}

TEST_CASE("e2b sdk: malformed Connect requests and a stream cut by its "
          "client lose nothing") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "malformed");
}

TEST_CASE("e2b sdk: a restart keeps every sandbox, its deadline, its "
          "acknowledged files and its processes (connect after the "
          "restart), and one that expired meanwhile is killed") {
  daemon_process d{with_execution()};
  d.start();
  temp_dir scratch;
  auto state = scratch.path() + "/sandboxes.json";
  check_case(d, "before_restart", "e2b_test", state);
  d.crash();
  std::this_thread::sleep_for(std::chrono::seconds{3});
  d.start();
  check_case(d, "after_restart", "e2b_test", state);
}

TEST_CASE("e2b sdk: watchDir recursive and not, and the polling watchers, "
          "on inotify") {
  daemon_process d{with_execution()};
  d.start();
  check_case(d, "watch");
}
