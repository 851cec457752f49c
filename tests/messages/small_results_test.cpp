// SPDX-License-Identifier: Apache-2.0
// network.status, the share policy replies, the agent actions and the
// deletions, and their
// native JSON, key for key (the wire goldens hold the same shapes end to
// end).
#include "messages/results/agents_json.hpp"
#include "messages/results/network_json.hpp"
#include "messages/results/sessions_json.hpp"
#include "messages/share.hpp"

#include <doctest/doctest.h>

using namespace allox;

TEST_CASE("network results: a mode without a namespace names only itself") {
  network_status_view v{"a", "s", "isolated", false, {}, {}, {}, {}};
  CHECK(json::serialize(to_json(v)) ==
        R"({"agent_id":"a","session_id":"s","mode":"isolated",)"
        R"("active":false})");
}

TEST_CASE("network results: proxy mode shows its policy and the broker's "
          "counters once the namespace exists") {
  network_status_view v;
  v.agent_id = "a";
  v.session_id = "s";
  v.mode = "proxy";
  v.proxy_url = std::string{"http://127.0.0.1:3128"};
  v.egress = egress_lists{{"example.com"}, {"10.0.0.0/8"}};
  CHECK(json::serialize(to_json(v)) ==
        R"({"agent_id":"a","session_id":"s","mode":"proxy","active":false,)"
        R"("proxy_url":"http://127.0.0.1:3128","egress":)"
        R"({"allow":["example.com"],"deny":["10.0.0.0/8"]}})");
  v.active = true;
  v.namespace_inode = 4026532000;
  v.connections = egress_connections{1, 5, 2, 1, 100, 200};
  CHECK(json::serialize(to_json(v)) ==
        R"({"agent_id":"a","session_id":"s","mode":"proxy","active":true,)"
        R"("proxy_url":"http://127.0.0.1:3128","egress":)"
        R"({"allow":["example.com"],"deny":["10.0.0.0/8"]},)"
        R"("namespace_inode":4026532000,"connections":{"open":1,"total":5,)"
        R"("refused":2,"failed":1,"bytes_sent":100,"bytes_received":200}})");
}

TEST_CASE("share results: the ids, then the policy in force") {
  share_view v{"a", "s", share_policy{true, "docs", "write"}};
  CHECK(json::serialize(to_json(v)) ==
        R"({"agent_id":"a","session_id":"s","enabled":true,"scope":"docs",)"
        R"("permission":"write"})");
  CHECK(json::serialize(to_json(share_view{"a", "s", {}})) ==
        R"({"agent_id":"a","session_id":"s","enabled":false,"scope":".",)"
        R"("permission":"read"})");
}

TEST_CASE("deletion results: a session's and an agent's") {
  CHECK(json::serialize(to_json(session_deleted{"a", "s"})) ==
        R"({"agent_id":"a","session_id":"s","deleted":true})");
  CHECK(json::serialize(to_json(agent_deleted{"a"})) ==
        R"({"agent_id":"a","deleted":true})");
}

TEST_CASE("agent results: a created agent's paths, a described one's "
          "sessions, and the id lists") {
  agent_view v{"a", "agents/a/workspace", "agents/a/workspace/shared", {}, {}};
  CHECK(json::serialize(to_json(v)) ==
        R"({"agent_id":"a","workspace_level":"agent",)"
        R"("relative_workspace":"agents/a/workspace",)"
        R"("relative_shared":"agents/a/workspace/shared"})");
  v.created_ns = 7;
  v.session_ids = std::vector<std::string>{"s1", "s2"};
  CHECK(json::serialize(to_json(v)) ==
        R"({"agent_id":"a","workspace_level":"agent",)"
        R"("relative_workspace":"agents/a/workspace",)"
        R"("relative_shared":"agents/a/workspace/shared","created_ns":7,)"
        R"("session_ids":["s1","s2"]})");
  CHECK(json::serialize(to_json(agent_ids{{"a", "b"}})) ==
        R"({"agent_ids":["a","b"]})");
  CHECK(json::serialize(to_json(session_ids{"a", {}})) ==
        R"({"agent_id":"a","session_ids":[]})");
}
