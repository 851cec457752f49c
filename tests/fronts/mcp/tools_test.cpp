// SPDX-License-Identifier: Apache-2.0
// The MCP front's tool catalog: the stable names, object schemas with every
// required argument among their properties, annotations on every tool, and
// `session` required unless the endpoint names a default.
#include "fronts/mcp/tools.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace allox;
using namespace allox::mcp;

TEST_CASE("mcp tools: every tool of the interface, once") {
  std::set<std::string> names;
  for (const auto& t : catalog())
    CHECK(names.insert(std::string{t.name}).second);
  std::set<std::string> expected{
      "session_create",  "session_list",    "session_delete",
      "session_fork",    "command_run",     "command_start",
      "command_output",  "command_input",   "command_stop",
      "file_read",       "file_write",      "file_list",
      "file_stat",       "file_move",       "file_remove",
      "file_search",     "file_replace",    "checkpoint_create",
      "checkpoint_list", "checkpoint_diff", "session_rollback",
      "process_tree"};
  CHECK(names == expected);
  CHECK(find_tool("file_read") != nullptr);
  CHECK(find_tool("nope") == nullptr);
}

TEST_CASE("mcp tools: schemas are objects whose required arguments are "
          "properties") {
  for (const auto& t : catalog()) {
    CAPTURE(t.name);
    auto j = to_json(t, false);
    for (auto key : {"inputSchema", "outputSchema"}) {
      const auto& s = j.at(key).as_object();
      CHECK(s.at("type") == json::value("object"));
      const auto& props = s.at("properties").as_object();
      if (auto* req = s.if_contains("required"))
        for (const auto& r : req->as_array())
          CHECK(props.contains(r.as_string()));
    }
    const auto& a = j.at("annotations").as_object();
    for (auto hint :
         {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"})
      CHECK(a.at(hint).is_bool());
    CHECK_FALSE(j.at("description").as_string().empty());
    // A read-only tool destroys nothing.
    CHECK_FALSE((t.read_only && t.destructive));
  }
}

TEST_CASE("mcp tools: destructive tools say they need confirm") {
  for (auto name :
       {"session_delete", "command_stop", "file_remove", "session_rollback"}) {
    CAPTURE(name);
    const auto* t = find_tool(name);
    REQUIRE(t != nullptr);
    CHECK(t->destructive);
    CHECK(std::string{t->description}.find("confirm: true") !=
          std::string::npos);
    CHECK(t->input.at("properties").as_object().contains("confirm"));
  }
}

TEST_CASE("mcp tools: session is required unless the endpoint has a "
          "default") {
  const auto* t = find_tool("file_read");
  REQUIRE(t != nullptr);
  auto required = [](const json::object& tool) {
    std::set<std::string> out;
    for (const auto& r : tool.at("inputSchema").at("required").as_array())
      out.insert(std::string{r.as_string()});
    return out;
  };
  CHECK(required(to_json(*t, false)) ==
        std::set<std::string>{"session", "path"});
  CHECK(required(to_json(*t, true)) == std::set<std::string>{"path"});
  // session_list takes no session.
  auto list = to_json(*find_tool("session_list"), false);
  CHECK_FALSE(list.at("inputSchema").as_object().contains("required"));
}
