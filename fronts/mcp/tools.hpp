// SPDX-License-Identifier: Apache-2.0
// The MCP front's tools (docs/mcp.md): names, descriptions, JSON Schemas of
// their arguments and results, and annotations, stated once. The names
// and argument names are a stable interface; what each tool calls in the
// core is in calls_*.cpp.
#pragma once

#include "messages/json.hpp"

#include <string_view>
#include <vector>

namespace allox::mcp {

enum class tool_id {
  session_create,
  session_list,
  session_delete,
  session_fork,
  session_rollback,
  command_run,
  command_start,
  command_output,
  command_input,
  command_stop,
  process_tree,
  file_read,
  file_write,
  file_list,
  file_stat,
  file_move,
  file_remove,
  file_search,
  file_replace,
  checkpoint_create,
  checkpoint_list,
  checkpoint_diff,
};

/// Which part of the core a tool calls (calls_*.cpp); commands need a
/// daemon that runs processes.
enum class tool_group { sessions, commands, files };

/// The group of `id`.
tool_group group_of(tool_id id);

struct tool_def {
  tool_id id;
  std::string_view name;
  std::string_view title;
  std::string_view description;
  /// JSON Schema of the arguments (an object schema).
  json::object input;
  /// JSON Schema of structuredContent (an object schema).
  json::object output;
  bool read_only = false;
  bool destructive = false;
  bool idempotent = false;
  /// Reaches beyond the session (a command may use the network).
  bool open_world = false;
  /// Takes `session` (every tool but session_list).
  bool per_session = true;
};

/// Every tool, in the order tools/list shows them.
const std::vector<tool_def>& catalog();

/// The tool named `name`, or null.
const tool_def* find_tool(std::string_view name);

/// The MCP Tool object of `t`; `session` is optional in its input schema
/// when the endpoint names a default session.
json::object to_json(const tool_def& t, bool default_session);

} // namespace allox::mcp
