// SPDX-License-Identifier: Apache-2.0
// alloxctl's commands. Most are one row of a table (table.cpp): the RPC
// action, which id is positional, which flags map to which parameters,
// whether the current context fills agent_id/session_id, and how the
// result looks as a table. Commands that do more than one call (run,
// logs -f, checkpoint watch/restore, file upload/download) and the local
// ones (config, use, current, clear) are written out in their own files.
#pragma once

#include "cli/config.hpp"
#include "cli/format.hpp"
#include "cli/http.hpp"

#include <csignal>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace allox::ctl {

/// Everything a command needs: settings, the configuration file, output
/// style and (made on first use) the connection to the daemon.
struct app_state {
  global_flags flags;
  config_file file;
  settings cfg;
  style st;
  std::ostream* out = nullptr;
  std::unique_ptr<client> conn;
  /// The command line as given, without the program's name (`run` tells
  /// `run list` from `run -- list`).
  std::vector<std::string> argv;

  /// The daemon at the configured URL.
  result<client*> daemon();
  /// agent_id and session_id from --agent/--session or the context.
  result<json::object> session_params() const;
  /// What a session-scoped command starts from: its ids and the daemon.
  struct session_call_t {
    json::object params;
    client* daemon = nullptr;
  };
  /// session_params() and daemon(), or the first of their errors.
  result<session_call_t> session_call();
};

/// How a flag's text becomes a parameter value.
enum class arg_kind {
  text,
  /// "null" means JSON null (session.configure limits).
  text_or_null,
  integer,
  number,
  /// Present: true.
  flag,
  /// Present: false (e.g. --no-scrub-runtime for scrub_runtime).
  negated_flag,
  /// "true" or "false".
  boolean,
  /// Any JSON text (metadata).
  json_text,
};

struct param_flag {
  /// e.g. "--message"; "-m,--message" for a short alias too.
  std::string flag;
  /// The RPC parameter; "a/b" sets key b of object parameter a.
  std::string param;
  arg_kind kind;
  std::string help;
};

/// Which ids the context supplies.
enum class scope {
  none,
  /// agent_id from --agent or the context.
  agent,
  /// agent_id and session_id from the flags or the context.
  session,
  /// agent_id/session_id only when given as flags (filters, e.g. audit).
  filter,
};

/// How a command's result looks as a table.
using table_view =
    std::function<void(const json::value&, std::ostream&, const style&)>;

struct command_spec {
  /// Rows of the table list the fields in order and leave out the tail.
  command_spec(
      std::vector<std::string> path_, std::string action_, std::string help_,
      scope where_ = scope::none, std::string positional_ = {},
      std::string positional_name_ = {}, bool positional_required_ = true,
      std::vector<param_flag> flags_ = {}, table_view view_ = nullptr,
      std::function<std::string(const json::object&)> action_for_ = nullptr)
      : path(std::move(path_)), action(std::move(action_)),
        help(std::move(help_)), where(where_),
        positional(std::move(positional_)),
        positional_name(std::move(positional_name_)),
        positional_required(positional_required_), flags(std::move(flags_)),
        view(std::move(view_)), action_for(std::move(action_for_)) {}

  std::vector<std::string> path;
  std::string action;
  std::string help;
  scope where = scope::none;
  /// The parameter the positional id fills ("" for none), its name in help.
  std::string positional;
  std::string positional_name;
  bool positional_required = true;
  std::vector<param_flag> flags;
  /// Null: the generic key/value or list rendering.
  table_view view;
  /// Picks another action from the parameters (e.g. rollback with a reset
  /// token); null keeps `action`.
  std::function<std::string(const json::object&)> action_for;
};

/// alloxctl's whole command tree: the global flags and every command;
/// the chosen one stores its runner in `*run`. main() parses with it, the
/// completion scripts are generated from it.
void build_app(CLI::App& app, app_state& st, std::function<int()>* run);

/// Every subcommand name at any depth (`list` of `checkpoint list` too).
std::vector<std::string> subcommand_names(const CLI::App& app);

/// Every table-driven command.
const std::vector<command_spec>& command_table();

/// Adds the table-driven commands; the chosen one stores its runner in
/// `*run`.
void add_table_commands(CLI::App& app, app_state& st,
                        std::function<int()>* run);

/// file upload and file download (cli/files.cpp).
void add_file_commands(CLI::App& app, app_state& st, std::function<int()>* run);

/// run, ps, logs, wait, checkpoint watch/restore, file upload/download,
/// metrics.
void add_flow_commands(CLI::App& app, app_state& st, std::function<int()>* run);

/// share status|enable|disable|list|read|write (share.cpp).
void add_share_commands(CLI::App& app, app_state& st,
                        std::function<int()>* run);

/// config init|show|set|path, use, current, clear.
void add_local_commands(CLI::App& app, app_state& st,
                        std::function<int()>* run);

/// version (cli/version.cpp).
void add_version_command(CLI::App& app, app_state& st,
                         std::function<int()>* run);

/// completion bash|zsh (cli/completion.cpp).
/// alloxctl session top (top.cpp); after the table commands, which make
/// `session`.
void add_top_command(CLI::App& app, app_state& st, std::function<int()>* run);

/// alloxctl mcp serve|tools|call (mcp.cpp).
void add_mcp_commands(CLI::App& app, app_state& st, std::function<int()>* run);

void add_completion_command(CLI::App& app, app_state& st,
                            std::function<int()>* run);

/// The completion script for `shell` (bash or zsh) of the tree `app`.
std::string completion_script(const CLI::App& app, const std::string& shell);

/// Finds or makes the nested subcommand `path` (e.g. checkpoint create).
CLI::App* subcommand(CLI::App& app, const std::vector<std::string>& path,
                     const std::string& help);

/// Prints a failure on stderr, one line, and returns its exit code.
int report(const failure& f);

/// Set by SIGINT once catch_interrupts() ran.
extern volatile std::sig_atomic_t interrupted;
/// SIGINT sets `interrupted` instead of ending the process (without
/// SA_RESTART, so blocking waits return early).
void catch_interrupts();

// -- table views (views.cpp, render.cpp) --------------------------------------

void view_agent_list(const json::value&, std::ostream&, const style&);
void view_session_list(const json::value&, std::ostream&, const style&);
void view_checkpoint_list(const json::value&, std::ostream&, const style&);
void view_diff(const json::value&, std::ostream&, const style&);
void view_history(const json::value&, std::ostream&, const style&);
void view_audit(const json::value&, std::ostream&, const style&);
void view_runs(const json::value&, std::ostream&, const style&);
void view_events(const json::value&, std::ostream&, const style&);
void view_generic(const json::value&, std::ostream&, const style&);

/// The actor tree of system.dump, indented with kinds, ids, states and
/// counters.
void view_dump(const json::value&, std::ostream&, const style&);
/// checkpoint.list as a graph: one line per checkpoint, newest first,
/// branches as lanes, with head, pins and messages.
void view_checkpoint_graph(const json::value&, std::ostream&, const style&);

} // namespace allox::ctl
