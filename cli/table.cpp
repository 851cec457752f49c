// SPDX-License-Identifier: Apache-2.0
// The table of commands that are one RPC call each, and the code that
// turns a row into a CLI11 subcommand and a call. Adding a command for a
// new action is one row here.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <deque>
#include <iostream>
#include <map>
#include <set>

namespace allox::ctl {

namespace {

const param_flag origin{"--origin", "origin", arg_kind::text,
                        "recorded in the audit trail"};
const param_flag force{"--force", "force", arg_kind::flag,
                       "delete a pinned checkpoint"};
const param_flag limit{"--limit", "limit", arg_kind::integer, "page size"};
const param_flag cursor{"--cursor", "cursor", arg_kind::text,
                        "continue after this cursor"};
const param_flag kill_processes{"--kill-processes", "kill_processes",
                                arg_kind::flag, "kill the active run first"};

/// The fields of policy.set (the agent's level or the session's).
std::vector<param_flag> policy_flags() {
  using k = arg_kind;
  return {{"--auto-checkpoint-turns", "auto_checkpoint_turns", k::boolean,
           "true or false"},
          {"--auto-checkpoint-runs", "auto_checkpoint_runs", k::boolean,
           "checkpoint after a run that exits 0: true or false"},
          {"--interval-seconds", "interval_seconds", k::integer,
           "checkpoint on this interval when something changed; 0 is off"},
          {"--keep-auto", "keep_auto", k::integer,
           "keep the last N automatic checkpoints; 0 keeps all"},
          {"--strict", "strict", k::boolean,
           "a failed automatic checkpoint fails the turn or run: true or "
           "false"},
          {"--keep-pre-rollback", "keep_pre_rollback", k::boolean,
           "keep the tree a rollback replaces as a checkpoint (undo): true or "
           "false; unset follows --auto-checkpoint-turns"},
          origin};
}

std::vector<command_spec> make_table() {
  using k = arg_kind;
  return {
      // -- store and agents --------------------------------------------------
      {{"store", "initialize"},
       "store.initialize",
       "re-check the store and audit it",
       scope::none},
      {{"agent", "create"},
       "agent.create",
       "create an agent (idempotent)",
       scope::none,
       "agent_id",
       "AGENT",
       true,
       {origin}},
      {{"agent", "list"},
       "agent.list",
       "list agents",
       scope::none,
       "",
       "",
       false,
       {},
       view_agent_list},
      {{"agent", "describe"},
       "agent.describe",
       "describe an agent",
       scope::agent,
       "agent_id",
       "AGENT",
       false},
      {{"agent", "delete"},
       "agent.delete",
       "delete an agent with all its sessions",
       scope::none,
       "agent_id",
       "AGENT",
       true,
       {origin}},
      // -- sessions ----------------------------------------------------------
      {{"session", "create"},
       "session.create",
       "create a session (and its agent)",
       scope::agent,
       "session_id",
       "SESSION",
       true,
       {origin}},
      {{"session", "list"},
       "session.list",
       "list an agent's sessions",
       scope::agent,
       "",
       "",
       false,
       {},
       view_session_list},
      {{"session", "describe"},
       "session.describe",
       "describe a session",
       scope::session,
       "session_id",
       "SESSION",
       false},
      {{"session", "delete"},
       "session.delete",
       "delete a session and its checkpoints",
       scope::session,
       "session_id",
       "SESSION",
       false,
       {origin}},
      {{"session", "unfence"},
       "session.unfence",
       "lift a fence and forget abandoned leases",
       scope::session,
       "session_id",
       "SESSION",
       false,
       {origin}},
      {{"session", "configure"},
       "session.configure",
       "network and resource limits of the next runs",
       scope::session,
       "session_id",
       "SESSION",
       false,
       {{"--network", "network", k::text, "inherit, isolated or proxy"},
        {"--egress", "egress", k::json_text,
         "proxy mode's policy: {\"allow\": [\"host:443\", ...], "
         "\"deny\": [...]} (null removes it)"},
        {"--memory-max", "limits/memory.max", k::text_or_null,
         "cgroup memory.max (null removes it)"},
        {"--pids-max", "limits/pids.max", k::text_or_null,
         "cgroup pids.max (null removes it)"},
        {"--cpu-max", "limits/cpu.max", k::text_or_null,
         "cgroup cpu.max (null removes it)"},
        {"--disk-max", "limits/disk.max", k::text_or_null,
         "share of the store: bytes, K/M/G/T, N% or max (null removes it)"},
        {"--reset", "reset", k::flag, "back to the daemon's defaults"},
        origin}},
      {{"network", "status"},
       "network.status",
       "network mode, proxy egress policy and connection counts",
       scope::session},
      {{"session", "fork"},
       "session.fork",
       "fork the session into a new one",
       scope::session,
       "new_session_id",
       "NEW_SESSION",
       true,
       {{"--checkpoint", "checkpoint_id", k::text,
         "fork at this checkpoint (default: the head)"},
        origin}},
      // -- checkpoints -------------------------------------------------------
      {{"checkpoint", "create"},
       "checkpoint.create",
       "snapshot the workspace",
       scope::session,
       "checkpoint_id",
       "CHECKPOINT",
       false,
       {{"-m,--message", "message", k::text, "what this checkpoint is"},
        {"--metadata", "metadata", k::json_text, "a JSON object"},
        {"--pinned", "pinned", k::flag, "protect it from deletion"},
        origin}},
      {{"checkpoint", "describe"},
       "checkpoint.describe",
       "describe a checkpoint (id or unique prefix)",
       scope::session,
       "checkpoint_id",
       "CHECKPOINT"},
      {{"checkpoint", "delete"},
       "checkpoint.delete",
       "delete a checkpoint (id or unique prefix)",
       scope::session,
       "checkpoint_id",
       "CHECKPOINT",
       true,
       {force, origin}},
      {{"checkpoint", "diff"},
       "checkpoint.diff",
       "changed paths from a checkpoint to another or to the workspace",
       scope::session,
       "from",
       "FROM",
       true,
       {{"--to", "to", k::text, "target checkpoint (default: the workspace)"},
        {"--writers", "writers", k::flag,
         "name the run and process behind each change"},
        cursor,
        limit},
       view_diff},
      {{"rollback"},
       "session.rollback",
       "restore the workspace to a checkpoint",
       scope::session,
       "checkpoint_id",
       "CHECKPOINT",
       false,
       {{"--num-ancestors", "num_ancestors", k::integer,
         "go back N checkpoints (1 = head)"},
        {"--no-scrub-runtime", "scrub_runtime", k::negated_flag,
         "keep sockets and FIFOs in .allox-tmp"},
        kill_processes,
        {"--reset-token", "reset_token", k::text,
         "roll back inside a runtime reset"},
        origin},
       nullptr,
       [](const json::object& p) {
         return p.contains("reset_token")
                    ? std::string{"session.rollback_after_runtime_reset"}
                    : std::string{"session.rollback"};
       }},
      // -- leases and runtime resets -----------------------------------------
      {{"lease", "acquire"},
       "execution.acquire",
       "take the session's execution lease",
       scope::session},
      {{"lease", "release"},
       "execution.release",
       "give a lease back",
       scope::none,
       "lease_token",
       "TOKEN"},
      {{"runtime", "register"},
       "runtime.register_background",
       "record a background execution",
       scope::session,
       "execution_id",
       "EXECUTION",
       true,
       {{"--sandbox-id", "sandbox_id", k::text, "the sandbox running it"}}},
      {{"runtime", "begin-reset"},
       "runtime.begin_reset",
       "fence the session for a runtime reset",
       scope::session,
       "",
       "",
       false,
       {kill_processes}},
      {{"runtime", "complete-reset"},
       "runtime.complete_reset",
       "lift a runtime-reset fence",
       scope::none,
       "reset_token",
       "TOKEN",
       true,
       {{"--success", "success", k::flag,
         "the reset worked: forget background executions"}}},
      // -- runs --------------------------------------------------------------
      {{"process", "status"},
       "process.status",
       "whether this daemon runs commands",
       scope::none},
      {{"stop"}, "process.stop", "stop a run", scope::session, "run_id", "RUN"},
      {{"events"},
       "process.events",
       "a run's process events",
       scope::session,
       "run_id",
       "RUN",
       true,
       {{"--after", "after", k::integer, "events after this sequence"}, limit},
       view_events},
      // -- audit and operators -----------------------------------------------
      {{"audit"},
       "audit.list",
       "the audit trail, oldest first",
       scope::filter,
       "",
       "",
       false,
       {{"--op", "op", k::text, "only this operation"}, cursor, limit},
       view_audit},
      {{"tracker", "status"},
       "tracker.status",
       "the process tracker's state",
       scope::none},
      // -- files, turns, policy ----------------------------------------------
      {{"file", "cat"},
       "file.read",
       "print a file of the workspace",
       scope::session,
       "path",
       "PATH"},
      {{"file", "history"},
       "file.history",
       "the checkpoints that changed a path, newest first, with who wrote it",
       scope::session,
       "path",
       "PATH",
       true,
       {cursor, limit},
       view_history},
      {{"file", "write"},
       "file.write",
       "write text to a file of the workspace",
       scope::session,
       "path",
       "PATH",
       true,
       {{"--data", "data", k::text, "the content"}}},
      {{"turn", "start"},
       "turn.session_start",
       "an agent runtime session begins (baseline checkpoint per policy)",
       scope::session,
       "",
       "",
       false,
       {{"--runtime-session-id", "runtime_session_id", k::text,
         "the agent runtime's own session id"}}},
      {{"turn", "message"},
       "turn.message",
       "the user message of the turn",
       scope::session,
       "",
       "",
       false,
       {{"-m,--message", "message", k::text, "the message"}}},
      {{"turn", "end"},
       "turn.end",
       "the turn ended (auto-checkpoint per policy)",
       scope::session,
       "turn_id",
       "TURN",
       false,
       {{"--interrupted", "interrupted", k::flag, "the turn was cut short"},
        {"--failed", "completed", k::negated_flag, "the turn failed"}}},
      {{"turn", "status"},
       "turn.status",
       "the session's turn state",
       scope::session},
      {{"policy", "get"},
       "policy.get",
       "the session's checkpoint policy and where each field comes from",
       scope::session},
      {{"policy", "set"},
       "policy.set",
       "change the session's checkpoint policy",
       scope::session,
       "",
       "",
       false,
       policy_flags()},
      {{"policy", "get-agent"},
       "policy.get",
       "the agent's checkpoint policy (inherited by its sessions)",
       scope::agent},
      {{"policy", "set-agent"},
       "policy.set",
       "change the agent's checkpoint policy",
       scope::agent,
       "",
       "",
       false,
       policy_flags()},
  };
}

/// The values one invocation gave a table command.
struct given {
  std::string positional;
  std::map<std::string, std::string> values;
  std::map<std::string, bool> flags;
  /// Parameters whose flag was on the command line.
  std::set<std::string> present;
};

/// "limits/memory.max" -> params["limits"]["memory.max"] = v.
void set_param(json::object& params, const std::string& name, json::value v) {
  auto slash = name.find('/');
  if (slash == std::string::npos) {
    params[name] = std::move(v);
    return;
  }
  auto& inner = params[name.substr(0, slash)];
  if (!inner.is_object())
    inner = json::object{};
  inner.as_object()[name.substr(slash + 1)] = std::move(v);
}

std::string flag_name(const std::string& flag) {
  auto comma = flag.rfind(',');
  return comma == std::string::npos ? flag : flag.substr(comma + 1);
}

result<json::value> convert(const param_flag& f, const std::string& text) {
  auto bad = [&](const char* what) {
    return usage_error(flag_name(f.flag) + " must be " + what + ", not '" +
                       text + "'");
  };
  switch (f.kind) {
  case arg_kind::integer: {
    size_t used = 0;
    try {
      auto n = std::stoll(text, &used);
      if (used == text.size())
        return json::value(static_cast<int64_t>(n));
    } catch (const std::exception&) {
    }
    return bad("an integer");
  }
  case arg_kind::number: {
    size_t used = 0;
    try {
      auto d = std::stod(text, &used);
      if (used == text.size())
        return json::value(d);
    } catch (const std::exception&) {
    }
    return bad("a number");
  }
  case arg_kind::boolean:
    if (text == "true" || text == "false")
      return json::value(text == "true");
    return bad("true or false");
  case arg_kind::json_text: {
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    if (ec)
      return bad("JSON");
    return v;
  }
  case arg_kind::text_or_null:
    if (text == "null")
      return json::value(nullptr);
    return json::value(text);
  default:
    return json::value(text);
  }
}

result<json::object> build_params(const command_spec& spec, const given& g,
                                  const app_state& st) {
  json::object params;
  const auto& cfg = st.cfg;
  switch (spec.where) {
  case scope::agent:
    if (spec.positional != "agent_id") {
      if (cfg.agent.value.empty())
        return usage_error("no agent: pass --agent or set a context with "
                           "`alloxctl use AGENT/SESSION`");
      params["agent_id"] = cfg.agent.value;
    }
    break;
  case scope::session: {
    json::object ids;
    if (spec.positional == "session_id") {
      // `session describe S` names the session; the agent still comes
      // from --agent or the context. Without S, the context's session.
      if (cfg.agent.value.empty())
        return usage_error("no agent: pass --agent or set a context with "
                           "`alloxctl use AGENT/SESSION`");
      ids["agent_id"] = cfg.agent.value;
      if (g.positional.empty()) {
        auto both = st.session_params();
        if (!both)
          return both.error();
        ids = std::move(*both);
      }
    } else {
      auto both = st.session_params();
      if (!both)
        return both.error();
      ids = std::move(*both);
    }
    for (auto& kv : ids)
      params[kv.key()] = kv.value();
    break;
  }
  case scope::filter:
    if (cfg.agent.source == "flag")
      params["agent_id"] = cfg.agent.value;
    if (cfg.session.source == "flag")
      params["session_id"] = cfg.session.value;
    break;
  case scope::none:
    break;
  }
  if (!spec.positional.empty()) {
    if (!g.positional.empty())
      params[spec.positional] = g.positional;
    else if (spec.positional_required)
      return usage_error(spec.positional_name + " is required");
  }
  for (const auto& f : spec.flags) {
    if (f.kind == arg_kind::flag || f.kind == arg_kind::negated_flag) {
      if (auto it = g.flags.find(f.param); it != g.flags.end() && it->second)
        set_param(params, f.param, f.kind == arg_kind::flag);
      continue;
    }
    auto it = g.values.find(f.param);
    if (it == g.values.end() || g.present.count(f.param) == 0)
      continue;
    auto v = convert(f, it->second);
    if (!v)
      return v.error();
    set_param(params, f.param, std::move(*v));
  }
  return params;
}

int run_spec(const command_spec& spec, const given& g, app_state& st) {
  auto params = build_params(spec, g, st);
  if (!params)
    return report(params.error());
  auto daemon = st.daemon();
  if (!daemon)
    return report(daemon.error());
  auto action = spec.action_for ? spec.action_for(*params) : spec.action;
  auto reply = (*daemon)->rpc(action, *params);
  if (!reply)
    return report(reply.error());
  auto& out = *st.out;
  print_result(out, st.st, *reply, [&] {
    (spec.view ? spec.view : view_generic)(*reply, out, st.st);
  });
  return exit_ok;
}

/// What each group of subcommands is about, for --help.
std::string group_help(const std::string& group) {
  static const std::map<std::string, std::string> text{
      {"store", "the store"},
      {"agent", "agents"},
      {"session", "sessions of an agent"},
      {"checkpoint", "checkpoints of the session"},
      {"lease", "the session's execution lease"},
      {"runtime", "background executions and runtime resets"},
      {"process", "tracked execution"},
      {"tracker", "the process tracker"},
      {"file", "files of the session's workspace"},
      {"turn", "agent turns"},
      {"policy", "automatic checkpoint policy"}};
  auto it = text.find(group);
  return it == text.end() ? "" : it->second;
}

} // namespace

const std::vector<command_spec>& command_table() {
  static const auto table = make_table();
  return table;
}

CLI::App* subcommand(CLI::App& app, const std::vector<std::string>& path,
                     const std::string& help) {
  CLI::App* at = &app;
  for (size_t i = 0; i < path.size(); ++i) {
    CLI::App* next = nullptr;
    for (auto* sub : at->get_subcommands([](CLI::App*) { return true; }))
      if (sub->get_name() == path[i])
        next = sub;
    if (next == nullptr) {
      next = at->add_subcommand(
          path[i], i + 1 == path.size() ? help : group_help(path[i]));
      if (i + 1 < path.size())
        next->require_subcommand(1);
    }
    at = next;
  }
  return at;
}

void add_table_commands(CLI::App& app, app_state& st,
                        std::function<int()>* run) {
  // CLI11 keeps pointers to where options store their values.
  static std::deque<given> storage;
  for (const auto& spec : command_table()) {
    auto* sub =
        subcommand(app, spec.path, spec.help + " (" + spec.action + ")");
    auto& g = storage.emplace_back();
    if (!spec.positional.empty())
      sub->add_option(spec.positional_name, g.positional, spec.positional_name);
    for (const auto& f : spec.flags) {
      if (f.kind == arg_kind::flag || f.kind == arg_kind::negated_flag)
        sub->add_flag(f.flag, g.flags[f.param], f.help);
      else
        sub->add_option(f.flag, g.values[f.param], f.help);
    }
    sub->callback([&spec, &g, &st, run, sub] {
      for (const auto& f : spec.flags)
        if (sub->get_option(flag_name(f.flag))->count() > 0)
          g.present.insert(f.param);
      *run = [&spec, &g, &st] {
        return run_spec(spec, g, st);
      };
    });
  }
}

} // namespace allox::ctl
