// SPDX-License-Identifier: Apache-2.0
// The command decoders (C::decode through cmd::decode): where an input
// breaks more than one rule, the error is the first in the order the
// prototype checks them, and which commands are actions or need tracked
// execution.
#include "messages/commands/agents.hpp"
#include "messages/commands/checkpoints.hpp"
#include "messages/commands/files.hpp"
#include "messages/commands/network.hpp"
#include "messages/commands/runs.hpp"
#include "messages/commands/runtime.hpp"
#include "messages/commands/share.hpp"
#include "messages/params.hpp"
#include "tests/fixtures/json_text.hpp"

#include <doctest/doctest.h>

using namespace allox;
using allox::test::obj;

namespace {

template <class T>
std::string first_error(const expected<T>& r) {
  REQUIRE_FALSE(r);
  CHECK(code_of(r.error()) == errc::invalid_argument);
  return message_of(r.error());
}

template <class C>
std::string first_error(const char* params) {
  return first_error(cmd::decode<C>(obj(params)));
}

} // namespace

// Commands sent only by actors have no decoder, so no routing row.
static_assert(cmd::is_action_v<cmd::checkpoint_list>);
static_assert(cmd::is_action_v<cmd::session_fork>);
static_assert(!cmd::is_action_v<cmd::session_rollback>);
static_assert(!cmd::is_action_v<cmd::session_delete>);
static_assert(!cmd::is_action_v<cmd::session_fork_into>);
static_assert(!cmd::is_action_v<cmd::process_subscribe>);
static_assert(!cmd::is_action_v<cmd::file_transfer_begin>);
static_assert(!cmd::is_action_v<cmd::file_transfer_end>);
static_assert(!cmd::is_action_v<cmd::share_access>);
static_assert(!cmd::is_action_v<cmd::debug_fault>);
static_assert(!cmd::is_action_v<cmd::agent_debug_fault>);
static_assert(cmd::needs_exec<cmd::session_configure>::value);
static_assert(cmd::needs_exec<cmd::network_status>::value);
static_assert(cmd::needs_exec<cmd::process_tree>::value);
static_assert(!cmd::needs_exec<cmd::process_subscribe>::value);
static_assert(!cmd::needs_exec<cmd::file_stat>::value);

TEST_CASE("command decode: file.* range checks follow every type check") {
  using cmd::file_list, cmd::file_read, cmd::file_write;
  CHECK(first_error<file_list>(R"({"limit":0,"cursor":5})") ==
        "cursor must be a string");
  CHECK(first_error<file_read>(R"({"path":"p","offset":-1,"encoding":"x"})") ==
        "encoding must be utf-8 or base64");
  CHECK(first_error<file_read>(R"({"offset":"x","encoding":"bogus"})") ==
        "missing string parameter: path");
  CHECK(first_error<file_read>(R"({"path":"p","offset":-1,"limit":0})") ==
        "offset must be at least 0");
  CHECK(first_error<file_write>(R"({"path":"p","mode":4095})") ==
        "data must be a string");
  CHECK(first_error<file_write>(
            R"({"path":"p","data":"aGk","encoding":"base64","mode":4095})") ==
        "mode must be 0..0777 (no setuid, setgid or sticky bits)");
  CHECK(first_error<file_write>(
            R"({"path":"p","data":"aGk","encoding":"base64"})") ==
        "data is not valid base64");
  auto ok = cmd::decode<file_write>(
      obj(R"({"path":"p","data":"aGk=","encoding":"base64","append":true})"));
  REQUIRE(ok);
  CHECK(ok->data == "hi");
  CHECK(ok->append);
  CHECK(ok->mode == 0644);
}

TEST_CASE("command decode: process.* keep the prototype's messages") {
  using cmd::process_events, cmd::process_list, cmd::process_output,
      cmd::process_start;
  // A wrong type is the range message, not "must be an integer".
  CHECK(first_error<process_events>(R"({"run_id":"r1","after":"x"})") ==
        "after must be nonnegative; limit must be 1..1000");
  CHECK(first_error<process_events>(R"({"after":"x"})") ==
        "missing string parameter: run_id");
  CHECK(first_error<process_list>(R"({"cursor":"c"})") == "cursor needs limit");
  CHECK(first_error<process_list>(R"({"cursor":5,"limit":-1})") ==
        "cursor must be a string");
  CHECK(first_error<process_output>(
            R"({"run_id":"r1","stream":"x","offset":"y"})") ==
        "stream must be stdout or stderr");
  CHECK(first_error<process_start>(R"({"argv":[],"timeout":0})") ==
        "argv must be a nonempty array of nonempty strings");
  CHECK(first_error<process_start>(R"({"argv":["ls"],"env":{"A=":"b"},
                                  "timeout":0})") ==
        "env must be a string mapping with valid environment names");
  CHECK(first_error<process_start>(R"({"argv":["ls"],"timeout":true,
                                  "stdin":"x"})") ==
        "timeout must be in (0, 86400] seconds");
  CHECK(first_error<process_start>(R"({"argv":["ls"],"stdin":"x",
                                  "pty":{"rows":0,"cols":80}})") ==
        "stdin must be a boolean");
  auto pty = cmd::decode<process_start>(
      obj(R"({"argv":["ls"],"stdin":true,"pty":{"rows":30,"cols":90}})"));
  REQUIRE(pty);
  CHECK_FALSE(pty->stdin_pipe);
  REQUIRE(pty->pty);
  CHECK(pty->pty->rows == 30);
  CHECK(pty->pty->cols == 90);
}

TEST_CASE("command decode: session.configure and network.configure") {
  using cmd::session_configure;
  CHECK(first_error<session_configure>(R"({"reset":"x","network":"bogus"})") ==
        "reset must be a boolean");
  CHECK(first_error<session_configure>(R"({"network":"bogus","limits":5})") ==
        "network must be inherit, isolated or proxy");
  CHECK(first_error<session_configure>(R"({"limits":5,"max_runs":0})") ==
        "limits must be an object");
  CHECK(first_error<session_configure>(R"({"max_runs":65})") ==
        "max_runs must be an integer 1..64");
  auto net = cmd::decode<cmd::network_configure>(
      obj(R"({"mode":" Proxy ","origin":"cli"})"));
  REQUIRE(net);
  CHECK(net->change.network == "proxy");
  CHECK(net->change.origin == "cli");
  CHECK_FALSE(net->change.has_limits);
  CHECK(first_error<cmd::network_configure>(R"({"mode":5})") ==
        "network mode must be inherit, isolated, or proxy");
}

TEST_CASE("command decode: session.fork checks in order") {
  using cmd::session_fork;
  CHECK(first_error<session_fork>(R"({"agent_id":"a","session_id":"s",
      "new_session_id":"s","new_agent_id":"b"})") ==
        "new_session_id must differ from session_id");
  CHECK(first_error<session_fork>(R"({"agent_id":"a","session_id":"s",
      "new_session_id":"t","new_agent_id":null,"checkpoint_id":5})") ==
        "fork into another agent is refused");
  auto fork = cmd::decode<session_fork>(obj(R"({"agent_id":"a",
      "session_id":"s","new_session_id":"t","new_agent_id":"a"})"));
  REQUIRE(fork);
  CHECK(fork->session.agent_id == "a");
  CHECK(fork->new_session_id == "t");
  CHECK(fork->checkpoint_id.empty());
}

TEST_CASE("command decode: rollback takes the daemon's arguments") {
  auto p = obj(R"({"checkpoint_id":"c","reset_token":"t"})");
  auto after = cmd::decode<cmd::session_rollback>(p, true, true);
  REQUIRE(after);
  CHECK(after->after_reset);
  CHECK(after->req.kill_processes);
  CHECK(after->req.reset_token == "t");
  auto plain = cmd::decode<cmd::session_rollback>(p, false, false);
  REQUIRE(plain);
  CHECK_FALSE(plain->after_reset);
  CHECK_FALSE(plain->req.kill_processes);
}

TEST_CASE("command decode: share.* check the target first") {
  using cmd::share_enable, cmd::share_write;
  CHECK(first_error<share_write>(R"({"target_agent_id":"a","path":5})") ==
        "missing string parameter: target_session_id");
  CHECK(first_error<share_write>(R"({"target_agent_id":"a",
      "target_session_id":"s","path":5})") ==
        "path must be a relative POSIX path");
  CHECK(first_error<share_write>(R"({"target_agent_id":"a",
      "target_session_id":"s","path":"f"})") ==
        "write requires base64 data up to 256 KiB");
  CHECK(first_error<share_enable>(R"({"scope":5,"permission":"x"})") ==
        "scope must be a string");
  CHECK(first_error<share_enable>(R"({"permission":"x"})") ==
        "permission must be read or write");
}
