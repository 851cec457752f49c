// SPDX-License-Identifier: Apache-2.0
// The AGENTS registry under concurrent requests: commands that arrive while
// their agent is being created wait for it and then go to its actor.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/session_files.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace allox;
using namespace allox::test;

namespace {

/// True when `aid` is in agent.list.
bool listed(http_client& c, const std::string& aid) {
  auto agents = expect_ok(c.rpc("agent.list"));
  for (const auto& id : agents.at("agent_ids").as_array())
    if (id.as_string() == aid)
      return true;
  return false;
}

} // namespace

TEST_CASE("agents: an agent.delete racing the agent's creation deletes it "
          "or finds nothing, and the registry agrees") {
  daemon_process d;
  d.start();
  auto deleter = d.new_client();
  for (int i = 0; i < 30; ++i) {
    auto aid = "race-" + std::to_string(i);
    CAPTURE(aid);
    auto created = std::async(std::launch::async, [&d, aid] {
      return d.new_client()->rpc("agent.create", ids(aid));
    });
    // Land at different moments of the creation (directories, the row).
    std::this_thread::sleep_for(std::chrono::microseconds(100 * (i % 10)));
    auto deleted = deleter->rpc("agent.delete", ids(aid));
    expect_ok(created.get());
    auto& c = d.client();
    if (deleted.status == 200) {
      // Gone for good: not listed, not described, creatable again.
      CHECK_FALSE(listed(c, aid));
      expect_error(c.rpc("agent.describe", ids(aid)), 400, "not_found");
      expect_ok(c.rpc("agent.create", ids(aid)));
    } else {
      // It arrived before the creation: nothing was deleted.
      expect_error(deleted, 400, "not_found");
    }
    CHECK(listed(c, aid));
    CHECK(expect_ok(c.rpc("agent.describe", ids(aid))).at("agent_id") ==
          json::value(aid));
  }
}

TEST_CASE("agents: requests for an agent being created wait for it") {
  daemon_process d;
  d.start();
  for (int i = 0; i < 10; ++i) {
    auto aid = "wait-" + std::to_string(i);
    CAPTURE(aid);
    std::vector<std::future<http_response>> jobs;
    jobs.push_back(std::async(std::launch::async, [&d, aid] {
      return d.new_client()->rpc("session.create", ids(aid, "s"));
    }));
    for (const char* action : {"agent.describe", "session.list"})
      jobs.push_back(std::async(std::launch::async, [&d, aid, action] {
        return d.new_client()->rpc(action, ids(aid));
      }));
    expect_ok(jobs[0].get());
    for (size_t j = 1; j < jobs.size(); ++j) {
      auto r = jobs[j].get();
      // Before the creation began: not found; otherwise answered by the
      // new agent's actor.
      if (r.status != 200)
        expect_error(r, 400, "not_found");
      else
        CHECK(r.json.as_object().at("result").at("agent_id") ==
              json::value(aid));
    }
    auto sessions = expect_ok(d.client().rpc("session.list", ids(aid)));
    CHECK(sessions.at("session_ids") == json::array{"s"});
  }
}

TEST_CASE("agents: a failing agent actor is logged with its action and "
          "restarted with its sessions") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  if (!fault_injection_built(c))
    return;
  expect_ok(c.rpc("session.create", ids("probe", "s")));
  expect_ok(
      c.rpc("debug.fault", fault("probe", "", "agent.describe", "throw")));
  auto failed = c.rpc("agent.describe", ids("probe"));
  expect_error(failed, 500, "internal");
  // The log names the actor, the action it was handling and the exception.
  CHECK(d.log().find("agent probe failed in agent.describe: injected fault "
                     "at agent.describe") != std::string::npos);
  // The replacement serves the agent and its session again.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  http_response described;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
    described = c.rpc("agent.describe", ids("probe"));
  } while (described.status != 200 &&
           std::chrono::steady_clock::now() < deadline);
  CHECK(expect_ok(described).at("session_ids") == json::array{"s"});
  expect_ok(c.rpc("session.describe", ids("probe", "s")));
  CHECK(audit_ops(c, {{"op", "agent.actor_failed"}}).size() == 1);
}
