// SPDX-License-Identifier: Apache-2.0
// Agents and sessions over RPC on a real loop-mounted Btrfs store.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/session_files.hpp"

#include "guest/os/btrfs.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

using namespace allox;
using namespace allox::test;

namespace {

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode;
}

} // namespace

TEST_CASE("sessions: the reference flow and result shapes") {
  daemon_process d;
  d.start();
  auto& c = d.client();

  auto init = expect_ok(c.rpc("store.initialize"));
  CHECK(init.at("root") == json::value(d.root()));
  CHECK(init.at("recovered_sessions").as_array().empty());

  auto agent = expect_ok(c.rpc("agent.create", ids("agent-1")));
  CHECK(agent ==
        json::object{{"agent_id", "agent-1"},
                     {"workspace_level", "agent"},
                     {"relative_workspace", "agents/agent-1/workspace"},
                     {"relative_shared", "agents/agent-1/workspace/shared"}});
  CHECK(S_ISDIR(mode_of(d.root() + "/agents/agent-1/workspace/shared")));
  CHECK(S_ISDIR(mode_of(d.root() + "/agents/agent-1/workspace/sessions")));

  auto created = expect_ok(c.rpc("session.create", ids("agent-1", "s1")));
  json::object expected{
      {"agent_id", "agent-1"},
      {"session_id", "s1"},
      {"workspace_level", "session"},
      {"relative_agent_workspace", "agents/agent-1/workspace"},
      {"relative_agent_shared", "agents/agent-1/workspace/shared"},
      {"relative_session_workspace", "agents/agent-1/workspace/sessions/s1"},
      {"relative_workspace", "agents/agent-1/workspace/sessions/s1/current"},
      {"checkpoint_ids", json::array{}},
      {"checkpoint_head", nullptr}};
  CHECK(created == expected);
  CHECK(expect_ok(c.rpc("session.describe", ids("agent-1", "s1"))) == expected);

  auto current = d.current("agent-1", "s1");
  CHECK(os::is_subvolume(current));
  CHECK((mode_of(current + "/.allox-tmp") & 0777) == 0700);
  CHECK(S_ISDIR(
      mode_of(d.root() + "/agents/agent-1/workspace/sessions/s1/checkpoints")));
}

TEST_CASE("sessions: agent.create is idempotent and audited every call") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  auto first = expect_ok(c.rpc("agent.create", ids("a")));
  auto second = expect_ok(c.rpc("agent.create", ids("a")));
  CHECK(first == second);
  auto ops = audit_ops(c, {{"agent_id", "a"}, {"op", "agent.create"}});
  CHECK(ops.size() == 2);
}

TEST_CASE("sessions: session.create creates the agent implicitly and refuses "
          "duplicates") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto agents = expect_ok(c.rpc("agent.list"));
  CHECK(agents.at("agent_ids") == json::array{"a"});
  auto dup = c.rpc("session.create", ids("a", "s"));
  expect_error(dup, 400, "already_exists");
  CHECK(dup.json.as_object().at("error") == "session already exists: a/s");
  auto ops = audit_ops(c, {{"agent_id", "a"}});
  CHECK(ops == std::vector<std::string>{"agent.create", "session.create"});
}

TEST_CASE("sessions: every invalid id form is refused before any path is "
          "formed") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  for (const std::string& bad : std::vector<std::string>{
           "", "../escape", "/absolute", "has space", std::string(65, 'x')}) {
    CAPTURE(bad);
    auto as_agent = c.rpc("agent.create", ids(bad));
    expect_error(as_agent, 400, "invalid_argument");
    auto as_session =
        c.rpc("session.create", {{"agent_id", "a"}, {"session_id", bad}});
    expect_error(as_session, 400, "invalid_argument");
    auto described =
        c.rpc("session.describe", {{"agent_id", bad}, {"session_id", "s"}});
    expect_error(described, 400, "invalid_argument");
  }
  auto msg =
      c.rpc("session.create", {{"agent_id", "a"}, {"session_id", "../escape"}});
  CHECK(msg.json.as_object().at("error") == "invalid session id: '../escape'");
  auto empty = c.rpc("agent.create", ids(""));
  CHECK(empty.json.as_object().at("error") ==
        "missing string parameter: agent_id");
  auto number = c.rpc("agent.create", {{"agent_id", 5}});
  expect_error(number, 400, "invalid_argument");
  // 64 characters are fine.
  expect_ok(
      c.rpc("session.create", ids(std::string(64, 'a'), std::string(64, 'b'))));
  // Nothing was created for the refused names.
  auto agents = expect_ok(c.rpc("agent.list"));
  CHECK(agents.at("agent_ids").as_array().size() == 1);
  CHECK(::access((d.root() + "/escape").c_str(), F_OK) != 0);
}

TEST_CASE("sessions: not found errors") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  auto r = c.rpc("session.describe", ids("nobody", "s"));
  expect_error(r, 400, "not_found");
  CHECK(r.json.as_object().at("error") == "session does not exist: nobody/s");
  expect_ok(c.rpc("agent.create", ids("a")));
  expect_error(c.rpc("session.describe", ids("a", "s")), 400, "not_found");
  expect_error(c.rpc("agent.describe", ids("b")), 400, "not_found");
  expect_error(c.rpc("session.list", ids("b")), 400, "not_found");
  expect_error(c.rpc("session.delete", ids("a", "s")), 400, "not_found");
}

TEST_CASE("sessions: list and describe agents") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  for (auto s : {"s2", "s1", "s3"})
    expect_ok(c.rpc("session.create", ids("a", s)));
  expect_ok(c.rpc("agent.create", ids("b")));
  auto list = expect_ok(c.rpc("session.list", ids("a")));
  CHECK(list.at("session_ids") == json::array{"s1", "s2", "s3"});
  auto desc = expect_ok(c.rpc("agent.describe", ids("a")));
  CHECK(desc.at("workspace_level") == "agent");
  CHECK(desc.at("session_ids") == json::array{"s1", "s2", "s3"});
  CHECK(expect_ok(c.rpc("agent.list")).at("agent_ids") ==
        json::array{"a", "b"});
}

TEST_CASE("sessions: delete removes the subvolume, keeps the audit trail") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(c.rpc("session.create", ids("a", "other")));
  auto del = expect_ok(c.rpc("session.delete", ids("a", "s")));
  CHECK(del == json::object{
                   {"agent_id", "a"}, {"session_id", "s"}, {"deleted", true}});
  CHECK(::access(d.current("a", "s").c_str(), F_OK) != 0);
  CHECK(::access((d.root() + "/agents/a/workspace/sessions/s").c_str(), F_OK) !=
        0);
  expect_error(c.rpc("session.describe", ids("a", "s")), 400, "not_found");
  expect_ok(c.rpc("session.describe", ids("a", "other")));
  auto ops = audit_ops(c, {{"agent_id", "a"}, {"session_id", "s"}});
  CHECK(ops == std::vector<std::string>{"session.create", "session.delete"});
  // The id can be used again.
  expect_ok(c.rpc("session.create", ids("a", "s")));
}

TEST_CASE("sessions: agent.delete removes every session and the shared area") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s1")));
  expect_ok(c.rpc("session.create", ids("a", "s2")));
  expect_ok(c.rpc("session.create", ids("b", "s1")));
  test::write_file(d.root() + "/agents/a/workspace/shared/note", "x");
  auto r = expect_ok(c.rpc("agent.delete", ids("a")));
  CHECK(r.at("deleted") == true);
  CHECK(::access((d.root() + "/agents/a").c_str(), F_OK) != 0);
  expect_error(c.rpc("session.describe", ids("a", "s1")), 400, "not_found");
  expect_ok(c.rpc("session.describe", ids("b", "s1")));
  CHECK(expect_ok(c.rpc("agent.list")).at("agent_ids") == json::array{"b"});
  auto ops = audit_ops(c, {{"agent_id", "a"}, {"op", "agent.delete"}});
  CHECK(ops.size() == 1);
  // And it can come back.
  expect_ok(c.rpc("session.create", ids("a", "s1")));
}

TEST_CASE("sessions: symlinked or non-directory workspace entries are "
          "refused") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("agent.create", ids("a")));
  auto sessions = d.root() + "/agents/a/workspace/sessions";
  REQUIRE(::symlink("/etc", (sessions + "/evil").c_str()) == 0);
  auto r = c.rpc("session.create", ids("a", "evil"));
  CHECK(r.status == 400);
  CHECK(::access("/etc/current", F_OK) != 0);
  test::write_file(sessions + "/file", "x");
  CHECK(c.rpc("session.create", ids("a", "file")).status == 400);
  // An agent whose shared area was replaced by a symlink is refused too.
  expect_ok(c.rpc("agent.create", ids("b")));
  auto shared = d.root() + "/agents/b/workspace/shared";
  REQUIRE(::rmdir(shared.c_str()) == 0);
  REQUIRE(::symlink("/tmp", shared.c_str()) == 0);
  auto again = c.rpc("agent.create", ids("b"));
  expect_error(again, 400, "invalid_argument");
  CHECK(again.json.as_object().at("error").as_string().find(
            "is not a managed directory") != json::string::npos);
}

TEST_CASE("sessions: audit.list filters, cursor and limits") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  for (auto s : {"s1", "s2", "s3"})
    expect_ok(
        c.rpc("session.create",
              {{"agent_id", "a"}, {"session_id", s}, {"origin", "tester"}}));
  auto page =
      expect_ok(c.rpc("audit.list", {{"op", "session.create"}, {"limit", 2}}));
  auto& events = page.at("events").as_array();
  REQUIRE(events.size() == 2);
  CHECK(page.at("has_more") == true);
  auto& first = events[0].as_object();
  CHECK(first.at("origin") == "tester");
  CHECK(first.at("agent_id") == "a");
  CHECK(first.at("timestamp_ns").as_int64() > 0);
  auto rest =
      expect_ok(c.rpc("audit.list", {{"op", "session.create"},
                                     {"cursor", page.at("next_cursor")}}));
  CHECK(rest.at("events").as_array().size() == 1);
  CHECK(rest.at("has_more") == false);
  auto one = expect_ok(c.rpc("audit.list", ids("a", "s2")));
  CHECK(one.at("events").as_array().size() == 1);
  expect_error(c.rpc("audit.list", {{"limit", 0}}), 400, "invalid_argument");
  expect_error(c.rpc("audit.list", {{"limit", 1001}}), 400, "invalid_argument");
  expect_error(c.rpc("audit.list", {{"cursor", -1}}), 400, "invalid_argument");
  expect_error(c.rpc("audit.list", {{"agent_id", "../x"}}), 400,
               "invalid_argument");
}

TEST_CASE("sessions: a store outside Btrfs is refused with the filesystem "
          "named") {
  test::temp_dir dir;
  auto [code, out] = run_daemon({"--root", dir.path(), "--listen",
                                 "127.0.0.1:" + std::to_string(free_port())});
  CHECK(code == 1);
  CHECK(out.find("workspace root must be Btrfs, got: ") != std::string::npos);
  auto [code2, out2] = run_daemon({"--root", dir / "missing"});
  CHECK(code2 == 1);
  CHECK(out2.find("workspace root does not exist") != std::string::npos);
}

TEST_CASE("sessions: listening beyond loopback needs a token") {
  test::temp_dir dir;
  auto [code, out] = run_daemon({"--root", dir.path(), "--listen",
                                 "0.0.0.0:" + std::to_string(free_port())});
  CHECK(code == 1);
  CHECK(out.find("a bearer token is required when listening beyond loopback") !=
        std::string::npos);
}
