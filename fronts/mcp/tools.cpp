// SPDX-License-Identifier: Apache-2.0
#include "fronts/mcp/tools.hpp"

#include <initializer_list>
#include <utility>

namespace allox::mcp {

namespace {

// -- schema builders ----------------------------------------------------------

using prop = std::pair<std::string_view, json::value>;

json::value typed(std::string_view type, std::string_view text) {
  json::object o{{"type", json::string_view{type.data(), type.size()}}};
  if (!text.empty())
    o["description"] = json::string_view{text.data(), text.size()};
  return o;
}

json::value str(std::string_view text = {}) {
  return typed("string", text);
}
json::value integer(std::string_view text = {}) {
  return typed("integer", text);
}
json::value boolean(std::string_view text = {}) {
  return typed("boolean", text);
}
json::value number(std::string_view text = {}) {
  return typed("number", text);
}

/// A value that may also be null.
json::value nullable(std::string_view type) {
  return json::object{
      {"type",
       json::array{json::string_view{type.data(), type.size()}, "null"}}};
}

json::value array_of(json::value items, std::string_view text = {}) {
  auto o = typed("array", text);
  o.as_object()["items"] = std::move(items);
  return o;
}

json::value enumerated(std::initializer_list<std::string_view> values,
                       std::string_view text) {
  auto o = typed("string", text);
  json::array all;
  for (auto v : values)
    all.emplace_back(json::string_view{v.data(), v.size()});
  o.as_object()["enum"] = std::move(all);
  return o;
}

json::object object(std::initializer_list<prop> props,
                    std::initializer_list<std::string_view> required = {}) {
  json::object properties;
  for (const auto& [name, schema] : props)
    properties[name] = schema;
  json::array req;
  for (auto r : required)
    req.emplace_back(json::string_view{r.data(), r.size()});
  json::object o{{"type", "object"}, {"properties", std::move(properties)}};
  if (!req.empty())
    o["required"] = std::move(req);
  return o;
}

json::value open_object(std::string_view text = {}) {
  return typed("object", text);
}

// -- shared parts -------------------------------------------------------------

constexpr std::string_view session_text =
    "The session, as AGENT/SESSION (the endpoint's default when omitted).";

prop session() {
  return {"session", str(session_text)};
}

prop path_arg() {
  return {"path", str("Relative to the session's workspace, or absolute "
                      "under /workspace.")};
}

prop confirm(std::string_view what) {
  return {"confirm", boolean(what)};
}

/// What every command tool returns.
json::object command_result() {
  return object({{"run_id", str()},
                 {"state", enumerated({"starting", "running", "completed",
                                       "stopped", "failed", "interrupted"},
                                      "The run's phase.")},
                 {"exit_code", nullable("integer")},
                 {"stop_reason", nullable("string")},
                 {"stdout", str("Output since the cursor given (UTF-8; "
                                "invalid bytes replaced).")},
                 {"stderr", str()},
                 {"cursor", str("Pass to command_output for what follows.")},
                 {"truncated", boolean("More output follows the cursor.")}},
                {"run_id", "state", "exit_code", "stdout", "stderr", "cursor"});
}

json::object command_args(bool run) {
  auto o = object(
      {session(),
       {"command", str("A shell line, run with sh -c (or give argv).")},
       {"argv", array_of(str(), "The program and its arguments.")},
       {"cwd", str("Where it starts, an absolute path in the sandbox "
                   "(default /workspace, the session's files).")},
       {"env", open_object("More environment variables, name to value.")},
       {"timeout_s",
        number(run ? "How long to wait for the command (default 50 s); it "
                     "keeps running after, and command_output follows it."
                   : "How long the run may live (default 3600 s).")}});
  if (!run)
    o["properties"].as_object()["stdin"] = boolean(
        "A pipe to the command's stdin for command_input (default true).");
  return o;
}

json::object file_entry_schema() {
  return object(
      {{"path", str()},
       {"type", enumerated({"file", "directory", "symlink", "other"}, "")},
       {"size", integer()},
       {"mode", integer()},
       {"mtime_ns", integer()}},
      {"path", "type", "size"});
}

json::object session_view() {
  return object({{"session", str("AGENT/SESSION")},
                 {"agent_id", str()},
                 {"session_id", str()},
                 {"checkpoint_ids", array_of(str())},
                 {"checkpoint_head", nullable("string")}},
                {"session", "agent_id", "session_id"});
}

tool_def make(tool_id id, std::string_view name, std::string_view title,
              std::string_view text, json::object input, json::object output) {
  tool_def t;
  t.id = id;
  t.name = name;
  t.title = title;
  t.description = text;
  t.input = std::move(input);
  t.output = std::move(output);
  return t;
}

tool_def reading(tool_def t) {
  t.read_only = true;
  t.idempotent = true;
  return t;
}

tool_def destroying(tool_def t, bool idempotent) {
  t.destructive = true;
  t.idempotent = idempotent;
  return t;
}

std::vector<tool_def> build() {
  std::vector<tool_def> all;
  // -- sessions ---------------------------------------------------------------
  all.push_back(make(
      tool_id::session_create, "session_create", "Create a session",
      "Creates a session: its own workspace (a Btrfs subvolume), processes, "
      "checkpoints and rollback. The agent is created too if it does not "
      "exist.",
      object({session(),
              {"max_runs", integer("Commands it may run at once, 1 to 64 "
                                   "(default 16).")}}),
      session_view()));
  auto list = reading(
      make(tool_id::session_list, "session_list", "List sessions",
           "Lists the sessions, of one agent or of every agent.",
           object({{"agent", str("Only this agent's sessions.")}}),
           object({{"sessions", array_of(str(), "AGENT/SESSION of each.")}},
                  {"sessions"})));
  list.per_session = false;
  all.push_back(std::move(list));
  all.push_back(destroying(
      make(tool_id::session_delete, "session_delete", "Delete a session",
           "Deletes a session with its files and checkpoints. Destructive: "
           "requires confirm: true.",
           object({session(), confirm("Must be true.")}, {"confirm"}),
           object({{"session", str()}, {"deleted", boolean()}},
                  {"session", "deleted"})),
      true));
  all.push_back(make(
      tool_id::session_fork, "session_fork", "Fork a session",
      "A new session of the same agent whose files start as a checkpoint of "
      "this one (its current files, checkpointed first, when no "
      "checkpoint_id is given). The source is not changed.",
      object({session(),
              {"new_session", str("The new session's id (or AGENT/ID of the "
                                  "same agent).")},
              {"checkpoint_id", str()}},
             {"new_session"}),
      session_view()));
  all.push_back(destroying(
      make(tool_id::session_rollback, "session_rollback", "Roll a session back",
           "Puts the session's files back as they were at a checkpoint. "
           "Destructive: requires confirm: true, unless the session's "
           "policy keeps a pre-rollback checkpoint (keep_pre_rollback), "
           "which makes it undoable.",
           object({session(),
                   {"checkpoint_id", str()},
                   confirm("Required unless a pre-rollback checkpoint is "
                           "kept.")},
                  {"checkpoint_id"}),
           object({{"checkpoint_id", str()},
                   {"pre_rollback_checkpoint_id", str()}},
                  {"checkpoint_id"})),
      false));
  // -- commands ---------------------------------------------------------------
  auto run = make(
      tool_id::command_run, "command_run", "Run a command",
      "Runs a command in the session's sandbox (its files at /workspace) and "
      "returns its stdout, stderr and exit code when it ends within "
      "timeout_s (50 s by default). A longer command is not an error: the "
      "result then has its run_id, state running and the output so far; "
      "follow it with command_output. Reports progress while it waits when "
      "the request carries a progress token.",
      command_args(true), command_result());
  run.destructive = true;
  run.open_world = true;
  all.push_back(std::move(run));
  auto start =
      make(tool_id::command_start, "command_start", "Start a command",
           "Starts a command in the session's sandbox and returns at once with "
           "its run_id; poll command_output for its output and state.",
           command_args(false), command_result());
  start.destructive = true;
  start.open_world = true;
  all.push_back(std::move(start));
  all.push_back(reading(make(
      tool_id::command_output, "command_output", "Read a command's output",
      "The output of a run since a cursor (from its start without one), the "
      "next cursor and the run's state and exit code.",
      object({session(), {"run_id", str()}, {"cursor", str()}}, {"run_id"}),
      command_result())));
  all.push_back(make(
      tool_id::command_input, "command_input", "Write to a command's stdin",
      "Sends data to the stdin of a run started by command_start; eof: true "
      "closes it.",
      object(
          {session(), {"run_id", str()}, {"data", str()}, {"eof", boolean()}},
          {"run_id"}),
      object({{"run_id", str()}, {"bytes", integer()}, {"eof", boolean()}},
             {"run_id", "bytes"})));
  all.push_back(destroying(
      make(tool_id::command_stop, "command_stop", "Stop a command",
           "Kills a run and every process it started. Destructive: requires "
           "confirm: true.",
           object({session(), {"run_id", str()}, confirm("Must be true.")},
                  {"run_id", "confirm"}),
           command_result()),
      true));
  all.push_back(reading(make(
      tool_id::process_tree, "process_tree", "A run's process tree",
      "Every process a run started (tracked in the kernel), nested from its "
      "first: pid, argv, exit.",
      object({session(), {"run_id", str()}}, {"run_id"}),
      object({{"run_id", str()},
              {"state", str()},
              {"tree", array_of(open_object())}},
             {"run_id", "tree"}))));
  // -- files ------------------------------------------------------------------
  all.push_back(reading(make(
      tool_id::file_read, "file_read", "Read a file",
      "Reads a regular file: limit bytes (1 MiB at most) from offset, as "
      "text or base64.",
      object({session(),
              path_arg(),
              {"offset", integer()},
              {"limit", integer()},
              {"encoding", enumerated({"text", "base64"}, "Default text.")}},
             {"path"}),
      object({{"path", str()},
              {"offset", integer()},
              {"size", integer()},
              {"eof", boolean()},
              {"encoding", str()},
              {"data", str()}},
             {"path", "size", "eof", "data"}))));
  all.push_back(destroying(
      make(tool_id::file_write, "file_write", "Write a file",
           "Replaces a file with content (made with its parent directories "
           "if missing), in one rename.",
           object({session(),
                   path_arg(),
                   {"content", str()},
                   {"encoding", enumerated({"text", "base64"}, "")}},
                  {"path", "content"}),
           object({{"path", str()}, {"size", integer()}}, {"path", "size"})),
      true));
  all.push_back(reading(make(
      tool_id::file_list, "file_list", "List a directory",
      "The entries of a directory, depth levels down (1: its own entries).",
      object(
          {session(), path_arg(), {"depth", integer("1 to 16, default 1.")}}),
      object({{"path", str()},
              {"entries", array_of(file_entry_schema())},
              {"has_more", boolean()}},
             {"path", "entries"}))));
  all.push_back(reading(
      make(tool_id::file_stat, "file_stat", "Describe a path",
           "Type, size, permission bits and modification time of a path (a "
           "symlink is described, not followed).",
           object({session(), path_arg()}, {"path"}), file_entry_schema())));
  all.push_back(
      make(tool_id::file_move, "file_move", "Move a path",
           "Renames a file or directory; never over an existing path.",
           object({session(), {"from", str()}, {"to", str()}}, {"from", "to"}),
           object({{"from", str()}, {"to", str()}}, {"from", "to"})));
  all.push_back(destroying(
      make(tool_id::file_remove, "file_remove", "Remove a path",
           "Removes a file or symlink, or a directory with recursive. "
           "Removing a directory is destructive: it requires confirm: true.",
           object({session(),
                   path_arg(),
                   {"recursive", boolean()},
                   confirm("Required to remove a directory.")},
                  {"path"}),
           object({{"path", str()}, {"removed", integer()}},
                  {"path", "removed"})),
      false));
  all.push_back(reading(make(
      tool_id::file_search, "file_search", "Search files",
      "Finds the lines containing pattern (a fixed string, or a POSIX "
      "extended regular expression with regex: true) in the files beneath "
      "path whose names match glob; with an empty pattern, the files whose "
      "names match glob. Bounded (limit matches, 200 by default); binary "
      "files are skipped.",
      object({session(),
              {"pattern", str()},
              {"path", str("Where to search (default the workspace).")},
              {"glob", str("fnmatch pattern over file names, e.g. *.ts; "
                           "with a / over paths below path.")},
              {"regex", boolean()},
              {"limit", integer()}}),
      object({{"path", str()},
              {"matches",
               array_of(object(
                   {{"path", str()}, {"line", integer()}, {"text", str()}},
                   {"path", "line", "text"}))},
              {"files", array_of(str())},
              {"files_scanned", integer()},
              {"truncated", boolean()}},
             {"matches", "files", "truncated"}))));
  all.push_back(destroying(
      make(tool_id::file_replace, "file_replace", "Edit a file",
           "Replaces old_string by new_string in a file, if old_string "
           "occurs exactly expected_count times (default 1); otherwise "
           "nothing changes and the error says how often it occurs.",
           object({session(),
                   path_arg(),
                   {"old_string", str()},
                   {"new_string", str()},
                   {"expected_count", integer()}},
                  {"path", "old_string", "new_string"}),
           object({{"path", str()},
                   {"replacements", integer()},
                   {"size", integer()}},
                  {"path", "replacements"})),
      false));
  // -- checkpoints ------------------------------------------------------------
  all.push_back(
      make(tool_id::checkpoint_create, "checkpoint_create", "Checkpoint",
           "Takes a read-only snapshot of the session's files, to diff against "
           "or roll back to.",
           object({session(),
                   {"checkpoint_id", str("Generated when omitted.")},
                   {"message", str()}}),
           object({{"checkpoint_id", str()}, {"parent_id", nullable("string")}},
                  {"checkpoint_id"})));
  all.push_back(reading(
      make(tool_id::checkpoint_list, "checkpoint_list", "List checkpoints",
           "The session's checkpoints, oldest first, with their parents and "
           "messages.",
           object({session()}),
           object({{"head", nullable("string")},
                   {"checkpoint_ids", array_of(str())},
                   {"checkpoints", array_of(open_object())}},
                  {"checkpoint_ids", "checkpoints"}))));
  all.push_back(reading(make(
      tool_id::checkpoint_diff, "checkpoint_diff", "Diff checkpoints",
      "The paths added, modified and deleted between two checkpoints, or "
      "between a checkpoint and the current files (without to). With "
      "writers, each change names the commands and processes that made "
      "it, or why none is named.",
      object(
          {session(), {"from", str()}, {"to", str()}, {"writers", boolean()}},
          {"from"}),
      object({{"from", str()},
              {"to", nullable("string")},
              {"changes",
               array_of(
                   object({{"path", str()}, {"change", str()}, {"type", str()}},
                          {"path", "change"}))},
              {"counts", open_object()},
              {"has_more", boolean()}},
             {"changes"}))));
  return all;
}

} // namespace

tool_group group_of(tool_id id) {
  switch (id) {
  case tool_id::session_create:
  case tool_id::session_list:
  case tool_id::session_delete:
  case tool_id::session_fork:
  case tool_id::session_rollback:
    return tool_group::sessions;
  case tool_id::command_run:
  case tool_id::command_start:
  case tool_id::command_output:
  case tool_id::command_input:
  case tool_id::command_stop:
  case tool_id::process_tree:
    return tool_group::commands;
  default:
    return tool_group::files;
  }
}

const std::vector<tool_def>& catalog() {
  static const std::vector<tool_def> all = build();
  return all;
}

const tool_def* find_tool(std::string_view name) {
  for (const auto& t : catalog())
    if (t.name == name)
      return &t;
  return nullptr;
}

json::object to_json(const tool_def& t, bool default_session) {
  auto input = t.input;
  if (t.per_session && !default_session) {
    json::array req{"session"};
    if (auto* r = input.if_contains("required"))
      for (const auto& v : r->as_array())
        req.push_back(v);
    input["required"] = std::move(req);
  }
  auto sv = [](std::string_view s) {
    return json::string_view{s.data(), s.size()};
  };
  return json::object{
      {"name", sv(t.name)},
      {"title", sv(t.title)},
      {"description", sv(t.description)},
      {"inputSchema", std::move(input)},
      {"outputSchema", t.output},
      {"annotations", json::object{{"title", sv(t.title)},
                                   {"readOnlyHint", t.read_only},
                                   {"destructiveHint", t.destructive},
                                   {"idempotentHint", t.idempotent},
                                   {"openWorldHint", t.open_world}}}};
}

} // namespace allox::mcp
