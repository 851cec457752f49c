// SPDX-License-Identifier: Apache-2.0
// alloxctl as an MCP client: `mcp tools` and `mcp call` against the
// daemon's /mcp (by default, by --url of the daemon, by --url of the
// endpoint), tool errors as the daemon's message and code.
#include "tests/cli/ctl.hpp"
#include "tests/fixtures/daemon.hpp"

#include <doctest/doctest.h>

using namespace allox;
using namespace allox::test;

TEST_CASE("mcp client: tools listed, calls made on the context's session, "
          "tool errors reported with their code") {
  daemon_process d;
  d.start();
  auto url = "http://127.0.0.1:" + std::to_string(d.port());
  ctl_process c{url};
  REQUIRE(c.run({"session", "create", "--agent", "a", "s"}).code == 0);
  REQUIRE(c.run({"use", "a/s"}).code == 0);

  auto table = c.run({"mcp", "tools"});
  CHECK(table.code == 0);
  CHECK(table.out.find("file_replace") != std::string::npos);
  CHECK(table.out.find("destructive") != std::string::npos);
  auto listed = c.run({"mcp", "tools", "-o", "json", "--url", url + "/mcp"});
  REQUIRE(listed.code == 0);
  CHECK(json::parse(listed.out).as_array().size() == 22);

  auto wrote =
      c.run({"mcp", "call", "file_write", "--args",
             R"({"path":"notes/a.txt","content":"hello"})", "-o", "json"});
  INFO(wrote.err);
  REQUIRE(wrote.code == 0);
  CHECK(json::parse(wrote.out).at("size") == json::value(5));
  auto read =
      c.run({"mcp", "call", "file_read", "--url", url, "--args",
             R"({"session":"a/s","path":"notes/a.txt"})", "-o", "json"});
  REQUIRE(read.code == 0);
  CHECK(json::parse(read.out).at("data") == json::value("hello"));
  auto fields =
      c.run({"mcp", "call", "file_stat", "--args", R"({"path":"notes"})"});
  CHECK(fields.code == 0);
  CHECK(fields.out.find("directory") != std::string::npos);

  auto missing =
      c.run({"mcp", "call", "file_read", "--args", R"({"path":"nope.txt"})"});
  CHECK(missing.code == 1);
  CHECK(missing.err.find("not_found") != std::string::npos);
  auto unknown = c.run({"mcp", "call", "no_such_tool"});
  CHECK(unknown.code == 1);
  CHECK(unknown.err.find("unknown tool") != std::string::npos);
  auto bad = c.run({"mcp", "call", "file_read", "--args", "[1]"});
  CHECK(bad.code == 2);
}
