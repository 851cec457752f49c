// SPDX-License-Identifier: Apache-2.0
// JSON-RPC as the MCP front reads and writes it: requests, notifications,
// the client's responses, batches, each malformed shape with its code, and
// protocol-version negotiation.
#include "fronts/mcp/jsonrpc.hpp"

#include <doctest/doctest.h>

using namespace allox;
using namespace allox::mcp;

namespace {

message one(std::string_view body) {
  bool batch = true;
  auto all = decode_body(body, batch);
  REQUIRE(all.size() == 1);
  CHECK_FALSE(batch);
  return all.front();
}

} // namespace

TEST_CASE("mcp jsonrpc: a request has an id, a notification none") {
  auto r = one(R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})");
  CHECK_FALSE(r.failed);
  CHECK(r.request);
  CHECK(r.id == json::value(7));
  CHECK(r.method == "tools/list");
  auto s = one(R"({"jsonrpc":"2.0","id":"a","method":"x","params":{"k":1}})");
  CHECK(s.id == json::value("a"));
  CHECK(s.params.at("k") == json::value(1));
  auto n = one(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  CHECK_FALSE(n.failed);
  CHECK_FALSE(n.request);
  CHECK(n.id.is_null());
}

TEST_CASE("mcp jsonrpc: a client's response is accepted and marked") {
  auto r = one(R"({"jsonrpc":"2.0","id":3,"result":{}})");
  CHECK_FALSE(r.failed);
  CHECK(r.response);
  CHECK_FALSE(r.request);
}

TEST_CASE("mcp jsonrpc: malformed messages carry their codes") {
  CHECK(one("{nope").error.code == code::parse_error);
  CHECK(one("[1").error.code == code::parse_error);
  CHECK(one("3").error.code == code::invalid_request);
  CHECK(one(R"({"id":1,"method":"x"})").error.code == code::invalid_request);
  CHECK(one(R"({"jsonrpc":"1.0","id":1,"method":"x"})").error.code ==
        code::invalid_request);
  auto no_method = one(R"({"jsonrpc":"2.0","id":1})");
  CHECK(no_method.error.code == code::invalid_request);
  CHECK(no_method.id == json::value(1));
  CHECK(one(R"({"jsonrpc":"2.0","id":{},"method":"x"})").error.code ==
        code::invalid_request);
  auto params = one(R"({"jsonrpc":"2.0","id":2,"method":"x","params":[1]})");
  CHECK(params.error.code == code::invalid_params);
  CHECK(params.id == json::value(2));
}

TEST_CASE("mcp jsonrpc: a batch is decoded message by message") {
  bool batch = false;
  auto all = decode_body(
      R"([{"jsonrpc":"2.0","id":1,"method":"ping"},7,
          {"jsonrpc":"2.0","method":"notifications/initialized"}])",
      batch);
  CHECK(batch);
  REQUIRE(all.size() == 3);
  CHECK(all[0].request);
  CHECK(all[1].failed);
  CHECK_FALSE(all[2].request);
  auto empty = decode_body("[]", batch);
  REQUIRE(empty.size() == 1);
  CHECK(empty[0].error.code == code::invalid_request);
}

TEST_CASE("mcp jsonrpc: answers and notifications are JSON-RPC 2.0") {
  auto ok = success(json::value(1), json::object{{"a", 1}});
  CHECK(json::serialize(ok) == R"({"jsonrpc":"2.0","id":1,"result":{"a":1}})");
  auto err = error(json::value("x"), {code::method_not_found, "no"});
  CHECK(json::serialize(err) ==
        R"({"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}})");
  auto n = notification("notifications/progress", {{"progress", 1}});
  CHECK(n.at("method") == json::value("notifications/progress"));
  CHECK_FALSE(n.contains("id"));
}

TEST_CASE("mcp jsonrpc: the three protocol versions are spoken, others get "
          "the newest") {
  for (auto v : {"2025-03-26", "2025-06-18", "2025-11-25"}) {
    CHECK(supported(v));
    CHECK(negotiate(v) == v);
  }
  CHECK_FALSE(supported("2024-11-05"));
  CHECK(negotiate("2024-11-05") == "2025-11-25");
  CHECK(negotiate("") == "2025-11-25");
}
