// SPDX-License-Identifier: Apache-2.0
// The E2B front's pure parts: create bodies, list queries as the SDK
// encodes them, pages, and multipart bodies as the SDK sends files.
#include "fronts/e2b/sandboxes.hpp"

#include <doctest/doctest.h>

using namespace allox;
using namespace allox::e2b;

TEST_CASE("e2b sandboxes: a create body, and what it refuses") {
  auto r = decode_create(json::parse(
      R"({"templateID":"base","timeout":30,"metadata":{"k":"v"},)"
      R"("envVars":{"A":"1"},"allow_internet_access":false,"autoPause":true})"));
  REQUIRE(r);
  CHECK(r->timeout_s == 30);
  CHECK(r->metadata.at("k") == "v");
  CHECK(r->envs.at("A") == "1");
  CHECK_FALSE(r->network.allow_internet);
  CHECK(r->at_timeout == on_timeout::pause);
  auto empty = decode_create(json::parse(R"({"templateID":""})"));
  REQUIRE(empty);
  CHECK(empty->template_id == "base");
  CHECK(empty->timeout_s == 300);
  CHECK_FALSE(decode_create(json::parse(R"([])")));
  CHECK_FALSE(decode_create(json::parse(R"({"timeout":0})")));
  CHECK_FALSE(decode_create(json::parse(R"({"timeout":86401})")));
  CHECK_FALSE(decode_create(json::parse(R"({"timeout":"5"})")));
  auto bad = decode_create(json::parse(R"({"metadata":{"k":1}})"));
  REQUIRE_FALSE(bad);
  CHECK(message_of(bad.error()) == "metadata.k must be a string");
}

TEST_CASE("e2b sandboxes: the list query as the SDK encodes it") {
  // {"a b": "c&d", x: "y"}, encoded three times over (the SDK's way).
  auto q = decode_list_query(
      "metadata=a%252520b%3Dc%252526d%26x%3Dy&state=running,paused&limit=10"
      "&nextToken=i42");
  REQUIRE(q);
  CHECK(q->metadata.at("a b") == "c&d");
  CHECK(q->metadata.at("x") == "y");
  CHECK(q->states == std::vector<std::string>{"running", "paused"});
  CHECK(q->limit == 10);
  CHECK(q->after == "i42");
  CHECK_FALSE(decode_list_query("state=gone"));
  CHECK_FALSE(decode_list_query("limit=0"));
  CHECK_FALSE(decode_list_query("metadata=%zz"));
}

TEST_CASE("e2b sandboxes: pages by id, filtered by metadata and state") {
  std::map<std::string, sandbox> all;
  for (auto id : {"i1", "i2", "i3", "i4"}) {
    sandbox s;
    s.id = id;
    s.metadata["team"] = id == std::string{"i3"} ? "blue" : "red";
    s.paused = id == std::string{"i4"};
    all[id] = s;
  }
  list_query q;
  q.limit = 2;
  std::string next;
  auto page = list_page(all, q, next);
  REQUIRE(page.size() == 2);
  CHECK(page[1]->id == "i2");
  CHECK(next == "i2");
  q.after = next;
  page = list_page(all, q, next);
  REQUIRE(page.size() == 2);
  CHECK(page[0]->id == "i3");
  CHECK(next.empty());
  list_query red;
  red.metadata["team"] = "red";
  red.states = {"running"};
  page = list_page(all, red, next);
  REQUIRE(page.size() == 2);
  CHECK(page[0]->id == "i1");
  CHECK(page[1]->id == "i2");
}

TEST_CASE("e2b sandboxes: times and error bodies the SDK reads") {
  CHECK(rfc3339(0) == "1970-01-01T00:00:00.000Z");
  CHECK(rfc3339(1796319180123) == "2026-12-03T17:33:00.123Z");
  CHECK(error_body(404, "gone") == R"({"code":404,"message":"gone"})");
  sandbox s;
  s.id = "i1";
  s.access_token = "t";
  auto c = created_json(s);
  CHECK(c.at("sandboxID") == "i1");
  CHECK(c.at("envdAccessToken") == "t");
  CHECK(c.at("envdVersion").as_string() == envd_version);
}

TEST_CASE("e2b sandboxes: a record in the catalog gives back the sandbox") {
  sandbox s;
  s.id = "i1";
  s.agent = "e2b";
  s.template_id = "base";
  s.metadata["k"] = "v";
  s.envs["A"] = "1";
  s.access_token = "tok";
  s.started_ms = 1000;
  s.end_ms = 2000;
  s.at_timeout = on_timeout::pause;
  s.network.allow_internet = false;
  auto back = from_record("e2b", "i1", to_record(s));
  REQUIRE(back);
  CHECK(back->metadata == s.metadata);
  CHECK(back->envs == s.envs);
  CHECK(back->access_token == "tok");
  CHECK(back->end_ms == 2000);
  CHECK(back->at_timeout == on_timeout::pause);
  CHECK_FALSE(back->network.allow_internet);
  CHECK_FALSE(from_record("a", "s", R"({"front":"mcp"})"));
  CHECK_FALSE(from_record("a", "s", "not json"));
  CHECK_FALSE(from_record("a", "s", R"({"front":"e2b"})")); // no token
}

TEST_CASE("e2b sandboxes: RFC 3339 with nanoseconds, as envd's entries") {
  CHECK(rfc3339_ns(1796319180123456789) == "2026-12-03T17:33:00.123456789Z");
  CHECK(rfc3339_ns(1796319180123456789, 3) == "2026-12-03T17:33:00.123Z");
}
