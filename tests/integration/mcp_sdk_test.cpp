// SPDX-License-Identifier: Apache-2.0
// The MCP front driven by the official TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in tests/fronts/mcp/sdk/package-lock.json,
// installed by scripts/test.sh): each case is one function of
// mcp_test.mjs, over Streamable HTTP or over stdio through alloxctl.
#include "tests/integration/mcp_sdk_case.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>

using namespace allox;
using namespace allox::test;

TEST_CASE("mcp sdk: tools listed with valid schemas, an agent's flow "
          "through every tool, each call audited") {
  // Runs tracked: the flow's diff names who made each change.
  daemon_process d{with_execution({"--process-tracking", "ebpf"})};
  d.start();
  check_mcp_case(d, "flow");
}

TEST_CASE("mcp sdk: the stdio transport through alloxctl mcp serve, and "
          "an endpoint's default session") {
  daemon_process d{with_execution()};
  d.start();
  check_mcp_case(d, "stdio");
}

TEST_CASE("mcp sdk: destructive tools need confirm and change nothing "
          "without it") {
  daemon_process d{with_execution()};
  d.start();
  check_mcp_case(d, "confirm");
}

TEST_CASE("mcp sdk: bad arguments are tool errors with the daemon's code "
          "and change nothing") {
  daemon_process d{with_execution()};
  d.start();
  check_mcp_case(d, "bad");
}

TEST_CASE("mcp: the transport's and JSON-RPC's errors, batches, 405, "
          "Origin and protocol versions") {
  daemon_process d;
  d.start();
  check_mcp_case(d, "protocol");
}

TEST_CASE("mcp: the daemon's bearer token rule applies to /mcp") {
  daemon_process d{with_token("s3cret")};
  d.start();
  std::string ping = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  std::map<std::string, std::string> json_body{
      {"Content-Type", "application/json"}};
  http_client none{"127.0.0.1", d.port()};
  CHECK(none.request("POST", "/mcp", ping, json_body).status == 401);
  CHECK(none.request("GET", "/mcp").status == 401);
  http_client wrong{"127.0.0.1", d.port(), "nope"};
  CHECK(wrong.request("POST", "/mcp", ping, json_body).status == 401);
  http_client bearer{"127.0.0.1", d.port(), "s3cret"};
  auto ok = bearer.request("POST", "/mcp", ping, json_body);
  CHECK(ok.status == 200);
  CHECK(ok.json.at("result") == json::object{});
  CHECK(bearer.request("GET", "/mcp").status == 405);
}
