// SPDX-License-Identifier: Apache-2.0
// Internal to the MCP front (fronts/mcp/*.cpp): one tool call in flight,
// and the tools' groups, each mapping a tool's arguments onto the core's
// commands.
#pragma once

#include "fronts/mcp/front.hpp"
#include "fronts/mcp/tools.hpp"
#include "messages/commands/command.hpp"

#include <caf/stateful_actor.hpp>

#include <functional>
#include <string>

namespace allox::mcp {

/// One tools/call: its arguments and how it ends. Exactly one of `done`
/// and `failed` is called, once.
struct tool_call {
  front_self self;
  const tool_def* tool = nullptr;
  json::object args;
  /// The session it names (or the endpoint's default); empty ids for a
  /// tool that takes none, or when neither names one.
  session_ref session;
  /// Reports progress (null when the client gave no progress token).
  std::function<void(double done, double total, std::string message)> progress;
  /// The tool's result: its structured content.
  std::function<void(json::object)> done;
  std::function<void(const caf::error&)> failed;
};

/// Sends `c` to the call's session (through the front's cache); `ok` gets
/// the typed reply, errors end the call.
template <class Command, class OnOk>
void to_session(const tool_call& call, Command c, OnOk ok) {
  auto self = call.self;
  fronts::call_session(
      self, self->state.sessions, call.session, std::move(c), std::move(ok),
      [failed = call.failed](caf::error& err) { failed(err); });
}

/// Decodes `Command` from native parameters with the core's own decoder
/// (its checks and messages, as every caller gets), or ends the call.
template <class Command, class... Given>
caf::optional<Command> decoded(const tool_call& call, const json::object& p,
                               Given&&... given) {
  auto c = cmd::decode<Command>(p, std::forward<Given>(given)...);
  if (!c) {
    call.failed(c.error());
    return caf::none;
  }
  return std::move(*c);
}

/// A path of the tool's view: relative to the workspace, or absolute under
/// /workspace (the sandbox's view); the native path the core takes.
std::string native_path(std::string_view p);

/// An argument's JSON (null when absent).
json::value arg(const tool_call& call, std::string_view name);

/// `confirm: true` was given; else the call ends with an error saying
/// what needs it, and false.
bool confirmed(const tool_call& call, std::string_view what);

// -- the groups ---------------------------------------------------------------

/// session_create, session_list, session_delete, session_fork,
/// session_rollback (calls_sessions.cpp).
void call_sessions(tool_call call);

/// command_run, command_start, command_output, command_input,
/// command_stop, process_tree (calls_commands.cpp).
void call_commands(tool_call call);

/// file_* and checkpoint_* (calls_files.cpp).
void call_files(tool_call call);

} // namespace allox::mcp
