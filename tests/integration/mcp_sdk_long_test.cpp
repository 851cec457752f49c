// SPDX-License-Identifier: Apache-2.0
// The MCP SDK case that mostly waits, on a 90 s command: a binary of its
// own, so that ctest runs it beside the other tests (tests/CMakeLists.txt).
#include "tests/integration/mcp_sdk_case.hpp"

using namespace allox;
using namespace allox::test;

TEST_CASE("mcp sdk: a 90 s command through start and poll, a command "
          "longer than the wait, progress notifications") {
  daemon_process d{with_execution()};
  d.start();
  check_mcp_case(d, "long", 240);
}
