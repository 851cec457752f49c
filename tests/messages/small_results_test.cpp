// SPDX-License-Identifier: Apache-2.0
// network.status, the share replies, the agent actions, fork and the
// deletions, and their native JSON, key for key (the wire goldens hold the same
// shapes end to end).
#include "messages/results/admin_json.hpp"
#include "messages/results/agents_json.hpp"
#include "messages/results/network_json.hpp"
#include "messages/results/sessions_json.hpp"
#include "messages/share.hpp"

#include <doctest/doctest.h>

#include <iterator>
#include <string>

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

TEST_CASE("share results: a listing, the bytes read as base64, the bytes "
          "written") {
  using kind = share_entry::kind;
  share_listing l{{{"a", kind::directory, 0},
                   {"b.txt", kind::file, 5},
                   {"fifo", kind::unsupported, 0}}};
  CHECK(json::serialize(to_json(l)) ==
        R"({"entries":[{"name":"a","type":"directory","size":0},)"
        R"({"name":"b.txt","type":"file","size":5},)"
        R"({"name":"fifo","type":"unsupported","size":0}]})");
  CHECK(json::serialize(to_json(share_listing{})) == R"({"entries":[]})");
  CHECK(json::serialize(to_json(share_content{std::string{"hi\0", 3}})) ==
        R"({"data_base64":"aGkA","size":3})");
  CHECK(json::serialize(to_json(share_written{7})) == R"({"written":7})");
  CHECK(std::string{name_of(share_op::write)} == "write");
}

TEST_CASE("fork results: the new session, then where it came from") {
  session_view v{"a",
                 "s2",
                 "a/workspace",
                 "a/shared",
                 "a/sessions/s2",
                 "a/sessions/s2/current",
                 {"cp-1"},
                 std::string{"cp-1"},
                 caf::none,
                 caf::none};
  auto o = to_json(session_forked{v, "s1", "cp-0"});
  CHECK(o.at("session_id") == "s2");
  CHECK(json::serialize(o.at("forked_from")) ==
        R"({"session_id":"s1","checkpoint_id":"cp-0"})");
  // forked_from comes last, after every key of session.describe.
  CHECK(std::prev(o.end())->key() == "forked_from");
  CHECK(o.size() == to_json(v).size() + 1);
}

TEST_CASE("session usage: a count without its controller (or the store's "
          "quotas) is null") {
  session_counters c;
  c.cpu_usage_usec = 1500;
  c.pids_current = 3;
  c.pids_refused = 0;
  CHECK(json::serialize(to_json(c)) ==
        R"({"cpu_usage_usec":1500,"memory_bytes":null,"memory_peak_bytes":)"
        R"(null,"pids_current":3,"oom_kills":null,"pids_refused":0,)"
        R"("disk_bytes":null})");
  c.disk_bytes = 4096;
  CHECK(to_json(c).at("disk_bytes") == 4096);
  session_view v;
  CHECK_FALSE(to_json(v).contains("usage"));
  v.usage = c;
  CHECK(to_json(v).at("usage").at("pids_current") == 3);
}

TEST_CASE("admin results: an audit page keeps each record's fields first, "
          "store.initialize and debug.fault") {
  audit_page p;
  p.events.push_back(
      {7, {11, "session.create", "a", "s", R"({"origin":"o"})"}});
  p.events.push_back({8, {12, "store.initialize", "", "", "not json"}});
  p.next_cursor = 8;
  p.has_more = true;
  CHECK(json::serialize(to_json(p)) ==
        R"({"events":[{"origin":"o","cursor":7,"timestamp_ns":11,)"
        R"("op":"session.create","agent_id":"a","session_id":"s"},)"
        R"({"cursor":8,"timestamp_ns":12,"op":"store.initialize"}],)"
        R"("next_cursor":8,"has_more":true})");
  CHECK(json::serialize(to_json(store_initialized{"/srv/allox", {}})) ==
        R"({"root":"/srv/allox","recovered_sessions":[]})");
  CHECK(json::serialize(to_json(fault_armed{})) == R"({"armed":true})");
}

TEST_CASE("admin results: the recovery summary the daemon logs") {
  recovery_summary r;
  r.recovered_sessions = {"a/s"};
  r.forgotten = {"gone"};
  r.purged_trash = 2;
  r.agents = 1;
  r.sessions = 3;
  CHECK(json::serialize(to_json(r)) ==
        R"({"recovered_sessions":["a/s"],"adopted_agents":[],)"
        R"("adopted_sessions":[],"forgotten":["gone"],)"
        R"("finished_deletions":[],"aborted_forks":[],"recovered_forks":[],)"
        R"("purged_trash":2,"agents":1,"sessions":3,"checkpoints":0})");
  r.imported = std::string{R"({"sessions":2})"};
  CHECK(json::serialize(to_json(r).at("imported")) == R"({"sessions":2})");
}

TEST_CASE("session results: describe names the limits of the next run only "
          "on a daemon that runs commands") {
  session_view v;
  v.agent_id = "a";
  v.session_id = "s";
  CHECK_FALSE(to_json(v).contains("limits"));
  v.limits = limit_list{};
  CHECK(json::serialize(to_json(v).at("limits")) == "{}");
  v.limits = limit_list{{"pids.max", "64"}, {"memory.high", "1G"}};
  auto o = to_json(v);
  CHECK(json::serialize(o.at("limits")) ==
        R"({"pids.max":"64","memory.high":"1G"})");
  CHECK(std::prev(o.end())->key() == "limits");
}
