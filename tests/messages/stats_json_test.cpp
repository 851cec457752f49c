// SPDX-License-Identifier: Apache-2.0
// system.dump's JSON rendered from typed actor stats
// (messages/results/stats_json.hpp): key order is the order of the
// entries, groups appear where they are first used, and every value type
// keeps its JSON type. The daemon's own tree is pinned by the wire golden
// test; these cases pin the renderer's rules one by one.
#include "messages/results/stats_json.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace allox;

namespace {

std::string text(const actor_stats& s) {
  return json::serialize(to_json(s));
}

} // namespace

TEST_CASE("stats json: entries in their order, each group created where "
          "it is first used, children last") {
  actor_stats s;
  s.kind = "session";
  s.agent_id = "a";
  s.session_id = "s";
  s.top().fact("state", "idle").gauge("mailbox", size_t{0});
  s.group("resources").fact("subvolume", "/x").gauge("checkpoints", 3);
  s.top().gauge("runs", 1);
  s.group("counters").counter("requests", uint64_t{5});
  // Back to a group created earlier: its object stays where it was.
  s.group("resources").fact("late", true);
  s.top().gauge("uptime_ms", int64_t{9});
  CHECK(text(s) == R"({"kind":"session","agent_id":"a","session_id":"s",)"
                   R"("state":"idle","mailbox":0,)"
                   R"("resources":{"subvolume":"/x","checkpoints":3,)"
                   R"("late":true},"runs":1,"counters":{"requests":5},)"
                   R"("uptime_ms":9})");
}

// No ';' in the name: CTest's test discovery would split the case there.
TEST_CASE("stats json: '/' nests groups, ids and kind only when set, "
          "children only for supervisors (even when empty)") {
  actor_stats t;
  t.kind = "tracker";
  auto c = t.group("counters");
  c.counter("events_received", 7);
  c.group("events_lost").counter("ring_full", 1).counter("total", 1);
  c.counter("restarts", 0);
  CHECK(text(t) == R"({"kind":"tracker","counters":{"events_received":7,)"
                   R"("events_lost":{"ring_full":1,"total":1},"restarts":0}})");

  actor_stats sup;
  sup.kind = "supervisor";
  sup.supervises = true;
  CHECK(text(sup) == R"({"kind":"supervisor","children":[]})");
  sup.children.push_back(t);
  sup.children.push_back(unresponsive_stats("request timed out"));
  CHECK(text(sup) ==
        R"({"kind":"supervisor","children":[)" + text(t) +
            R"(,{"state":"unresponsive","error":"request timed out"}]})");
}

TEST_CASE("stats json: every value type keeps its JSON type") {
  actor_stats s;
  s.kind = "metadata";
  s.top()
      .fact("head", nullptr)
      .fact("lane", false)
      .gauge("signed", int64_t{-2})
      .counter("unsigned", uint64_t{18446744073709551615u})
      .gauge("ratio", 0.5)
      .fact("path", std::string{"/p"})
      .histogram("commit_seconds", stats_histogram{{1, 0, 2}, 0.25, 3})
      .fact("egress", stats_json{R"({"allow":["a",1]})"});
  auto o = to_json(s);
  CHECK(o.at("head").is_null());
  CHECK(o.at("lane").is_bool());
  CHECK(o.at("signed").is_int64());
  CHECK(o.at("unsigned").is_uint64());
  CHECK(o.at("ratio").is_double());
  CHECK(o.at("path") == "/p");
  CHECK(json::serialize(o.at("commit_seconds")) ==
        R"({"counts":[1,0,2],"sum":2.5E-1,"count":3})");
  CHECK(json::serialize(o.at("egress")) == R"({"allow":["a",1]})");
}

TEST_CASE("stats json: a JSON object added as entries renders back as it "
          "was") {
  auto in = json::parse(R"({"mode":"proxy","active":true,"none":null,)"
                        R"("egress":{"allow":["x"],"rules":{}},)"
                        R"("namespace_inode":42,)"
                        R"("connections":{"open":1,"total":3}})")
                .as_object();
  actor_stats s;
  s.kind = "session";
  add_json_entries(s.group("network"), in);
  CHECK(to_json(s).at("network") == json::value(in));
  // Numbers are gauges and the rest facts: nothing here is a counter.
  for (const auto& e : s.entries)
    CHECK(e.kind != stats_kind::counter);
  CHECK(s.find("network/connections", "open")->kind == stats_kind::gauge);
  CHECK(s.find("network", "mode")->kind == stats_kind::fact);
}

TEST_CASE("stats json: actor_stats goes through CAF's serializers whole") {
  actor_stats s;
  s.kind = "agent";
  s.agent_id = "a";
  s.top().fact("state", "idle").fact("head", nullptr);
  s.group("counters").counter("restarts", 2).gauge("ratio", 1.5);
  s.top().histogram("h", stats_histogram{{1, 2}, 0.5, 3});
  s.supervises = true;
  s.children.push_back(unresponsive_stats("gone"));
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  REQUIRE_FALSE(sink(s));
  actor_stats back;
  caf::binary_deserializer source{nullptr, buf};
  REQUIRE_FALSE(source(back));
  CHECK(text(back) == text(s));
  REQUIRE(back.entries.size() == s.entries.size());
  CHECK(back.find("counters", "restarts")->kind == stats_kind::counter);
  CHECK(back.find("counters", "ratio")->kind == stats_kind::gauge);
}
