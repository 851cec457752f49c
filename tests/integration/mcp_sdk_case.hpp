// SPDX-License-Identifier: Apache-2.0
// One case of tests/fronts/mcp/sdk/mcp_test.mjs against a daemon, for the
// MCP SDK tests (mcp_sdk_test.cpp, mcp_sdk_long_test.cpp). The including
// target defines ALLOX_MCP_SDK_DIR and ALLOXCTL_PATH.
#pragma once

#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/node_script.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <string>

namespace allox::test {

inline void check_mcp_case(daemon_process& d, const std::string& name,
                           int limit_s = 120) {
  std::string dir = ALLOX_MCP_SDK_DIR;
  struct stat st {};
  REQUIRE_MESSAGE(
      ::stat((dir + "/node_modules/@modelcontextprotocol/sdk").c_str(), &st) ==
          0,
      "the MCP SDK is not installed: npm ci --prefix " << dir);
  auto env = "ALLOX_URL=http://127.0.0.1:" + std::to_string(d.port()) +
             " ALLOXCTL='" + ALLOXCTL_PATH + "'";
  auto [code, out] = run_node_case(dir, env, "mcp_test.mjs", name, limit_s);
  INFO(out);
  INFO(d.log());
  CHECK(code == 0);
  CHECK(out.find("ok " + name) != std::string::npos);
}

} // namespace allox::test
