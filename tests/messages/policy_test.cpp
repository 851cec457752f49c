// SPDX-License-Identifier: Apache-2.0
#include "messages/policy.hpp"

#include <doctest/doctest.h>

using namespace allox;
using namespace std::string_literals;

TEST_CASE("policy: the session's setting, else the agent's, else the "
          "default") {
  checkpoint_policy agent;
  agent.auto_checkpoint_turns = true;
  agent.keep_auto = 5;
  checkpoint_policy session;
  session.auto_checkpoint_turns = false;
  session.interval_seconds = 30;
  auto e = resolve(agent, session);
  CHECK(e.auto_checkpoint_turns == false);
  CHECK(e.keep_auto == int64_t{5});
  CHECK(e.interval_seconds == 30);
  CHECK(e.strict == false);
  auto d = describe_policy(agent, session, true);
  const auto& sources = d.at("sources").as_object();
  CHECK(sources.at("auto_checkpoint_turns") == "session");
  CHECK(sources.at("keep_auto") == "agent");
  CHECK(sources.at("strict") == "default");
  CHECK(d.at("session") == json::object{{"auto_checkpoint_turns", false},
                                        {"interval_seconds", 30}});
  CHECK_FALSE(describe_policy(agent, {}, false).contains("session"));
}

TEST_CASE("policy: set, clear with null, and the catalog text round trip") {
  auto change = decode_policy_change(
      json::parse(R"({"strict":true,"keep_auto":3,"interval_seconds":null,
                      "agent_id":"a"})")
          .as_object());
  REQUIRE(change);
  checkpoint_policy before;
  before.interval_seconds = 60;
  before.auto_checkpoint_runs = true;
  auto after = apply(before, *change);
  CHECK(after.strict == true);
  CHECK(after.keep_auto == int64_t{3});
  CHECK(after.interval_seconds == caf::none);
  CHECK(after.auto_checkpoint_runs == true);
  auto text = serialize_policy(after);
  REQUIRE(text);
  auto back = parse_policy(text);
  CHECK(to_json(back) == to_json(after));
  CHECK(serialize_policy(checkpoint_policy{}) == caf::none);
  CHECK(to_json(parse_policy("not json"s)).empty());
}

TEST_CASE("policy: wrong types and ranges are refused") {
  for (const char* bad :
       {R"({"strict":1})", R"({"auto_checkpoint_turns":"true"})",
        R"({"interval_seconds":-1})", R"({"interval_seconds":86401})",
        R"({"keep_auto":true})", R"({"keep_auto":1.5})"}) {
    INFO(bad);
    CHECK_FALSE(decode_policy_change(json::parse(bad).as_object()));
  }
}

TEST_CASE("policy: keep_pre_rollback follows the turn policy unless set") {
  checkpoint_policy agent;
  CHECK_FALSE(resolve(agent, {}).keep_pre_rollback);
  agent.auto_checkpoint_turns = true;
  CHECK(resolve(agent, {}).keep_pre_rollback);
  checkpoint_policy session;
  session.keep_pre_rollback = false;
  CHECK_FALSE(resolve(agent, session).keep_pre_rollback);
  agent.auto_checkpoint_turns = false;
  agent.keep_pre_rollback = true;
  auto d = describe_policy(agent, {}, true);
  CHECK(d.at("policy").at("keep_pre_rollback") == true);
  CHECK(d.at("sources").at("keep_pre_rollback") == "agent");
}

TEST_CASE("policy: policy.get's result names its agent, and its session "
          "only at a session's level") {
  checkpoint_policy agent;
  agent.keep_auto = 5;
  checkpoint_policy session;
  session.keep_pre_rollback = true;
  policy_view at_session{"a", "s", agent, session};
  CHECK(at_session.effective().keep_pre_rollback);
  CHECK(at_session.effective().keep_auto == 5);
  std::string keys;
  for (const auto& kv : to_json(at_session))
    keys += std::string{kv.key()} + ",";
  CHECK(keys == "policy,sources,agent,session,agent_id,session_id,");
  policy_view at_agent{"a", "", agent, caf::none};
  CHECK_FALSE(at_agent.effective().keep_pre_rollback);
  keys.clear();
  for (const auto& kv : to_json(at_agent))
    keys += std::string{kv.key()} + ",";
  CHECK(keys == "policy,sources,agent,agent_id,");
}
