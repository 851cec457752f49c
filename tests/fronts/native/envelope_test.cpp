// SPDX-License-Identifier: Apache-2.0
// The native wire's request envelope: what POST /v1/rpc's body must be,
// and the prototype's words for what it is not.
#include "fronts/native/envelope.hpp"

#include <doctest/doctest.h>

using namespace allox;
using allox::native::decode_envelope;

TEST_CASE("envelope: action and params, params optional or null") {
  auto full = decode_envelope(
      R"({"action":"session.describe","params":{"agent_id":"a"}})");
  REQUIRE(full);
  CHECK(full->action == "session.describe");
  CHECK(full->params.at("agent_id") == "a");
  for (auto body : {R"({"action":"agent.list"})",
                    R"({"action":"agent.list","params":null})"}) {
    auto bare = decode_envelope(body);
    REQUIRE(bare);
    CHECK(bare->action == "agent.list");
    CHECK(bare->params.empty());
  }
}

TEST_CASE("envelope: a body that is not one is invalid_argument, saying "
          "why") {
  auto broken = decode_envelope(R"({"action":)");
  REQUIRE_FALSE(broken);
  CHECK(code_of(broken.error()) == errc::invalid_argument);
  CHECK(message_of(broken.error()).rfind("invalid JSON body: ", 0) == 0);
  for (auto body :
       {R"([1,2])", R"({"params":{}})", R"({"action":7})",
        R"({"action":"a","params":[]})", R"({"action":"a","params":"x"})"}) {
    auto wrong = decode_envelope(body);
    REQUIRE_FALSE(wrong);
    CHECK(code_of(wrong.error()) == errc::invalid_argument);
    CHECK(message_of(wrong.error()) ==
          "request requires string action and object params");
  }
}
