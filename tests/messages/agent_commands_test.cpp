// SPDX-License-Identifier: Apache-2.0
// The store and agent commands' decoders (messages/commands/agents.hpp):
// the prototype's validation messages, the agent id checked first.
#include "messages/commands/agents.hpp"
#include "messages/params.hpp"
#include "tests/fixtures/json_text.hpp"

#include <doctest/doctest.h>

using namespace allox;
using allox::test::obj;

namespace {

template <class T>
std::string error_of(const expected<T>& r) {
  REQUIRE_FALSE(r);
  return message_of(r.error());
}

} // namespace

TEST_CASE("agent commands: the agent id is required and validated") {
  auto missing = obj(R"({})");
  auto bad = obj(R"({"agent_id":"../x","session_id":"s"})");
  auto number = obj(R"({"agent_id":5})");
  for (const auto* p : {&missing, &number}) {
    CHECK(error_of(cmd::decode<cmd::agent_create>(*p)) ==
          "missing string parameter: agent_id");
    CHECK(error_of(cmd::decode<cmd::agent_describe>(*p)) ==
          "missing string parameter: agent_id");
    CHECK(error_of(cmd::decode<cmd::agent_delete>(*p)) ==
          "missing string parameter: agent_id");
    CHECK(error_of(cmd::decode<cmd::session_list>(*p)) ==
          "missing string parameter: agent_id");
    CHECK(error_of(cmd::decode<cmd::session_create>(*p)) ==
          "missing string parameter: agent_id");
    CHECK(error_of(cmd::decode<cmd::session_delete_request>(*p)) ==
          "missing string parameter: agent_id");
  }
  CHECK(error_of(cmd::decode<cmd::agent_create>(bad)) ==
        "invalid agent id: '../x'");
  CHECK(error_of(cmd::decode<cmd::session_create>(bad)) ==
        "invalid agent id: '../x'");
  CHECK(code_of(cmd::decode<cmd::agent_create>(bad).error()) ==
        errc::invalid_argument);
}

TEST_CASE("agent commands: sessions need a valid session id") {
  auto missing = obj(R"({"agent_id":"a"})");
  CHECK(error_of(cmd::decode<cmd::session_create>(missing)) ==
        "missing string parameter: session_id");
  CHECK(error_of(cmd::decode<cmd::session_delete_request>(missing)) ==
        "missing string parameter: session_id");
  auto bad = obj(R"({"agent_id":"a","session_id":"has space"})");
  CHECK(error_of(cmd::decode<cmd::session_create>(bad)) ==
        "invalid session id: 'has space'");
  CHECK(error_of(cmd::decode<cmd::session_delete_request>(bad)) ==
        "invalid session id: 'has space'");
}

TEST_CASE("agent commands: ids and origin are carried") {
  auto p = obj(R"({"agent_id":"a","session_id":"s","origin":"cli"})");
  auto create = cmd::decode<cmd::session_create>(p);
  REQUIRE(create);
  CHECK(create->session.agent_id == "a");
  CHECK(create->session.session_id == "s");
  CHECK(create->origin == "cli");
  auto del = cmd::decode<cmd::session_delete_request>(p);
  REQUIRE(del);
  CHECK(del->session.session_id == "s");
  CHECK(del->origin == "cli");
  auto agent = cmd::decode<cmd::agent_create>(p);
  REQUIRE(agent);
  CHECK(agent->agent_id == "a");
  CHECK(agent->origin == "cli");
  CHECK(cmd::decode<cmd::agent_delete>(p)->origin == "cli");
  CHECK(cmd::decode<cmd::agent_describe>(p)->agent_id == "a");
  CHECK(cmd::decode<cmd::session_list>(p)->agent_id == "a");
  CHECK(cmd::agent_of(*create) == "a");
  CHECK(cmd::agent_of(*agent) == "a");
  // Without one, the default origin.
  auto plain = obj(R"({"agent_id":"a","session_id":"s"})");
  CHECK(cmd::decode<cmd::agent_delete>(plain)->origin ==
        params::default_origin);
  CHECK(cmd::decode<cmd::session_create>(plain)->origin ==
        params::default_origin);
}

TEST_CASE("agent commands: store.initialize and agent.list take nothing") {
  CHECK(cmd::decode<cmd::store_initialize>(obj(R"({"x":1})")));
  CHECK(cmd::decode<cmd::agent_list>(obj(R"({})")));
  CHECK(std::string{cmd::agent_create::name} == "agent.create");
  CHECK(std::string{cmd::session_delete_request::name} == "session.delete");
  CHECK(std::string{cmd::agent_debug_fault::name} == "debug.fault");
}
