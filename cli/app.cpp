// SPDX-License-Identifier: Apache-2.0
// What every alloxctl command shares: the daemon connection made on first
// use, the session a command names, Ctrl-C, and how a failure is printed.
// Kept out of main.cpp so that the library links on its own (the tests
// link it without alloxctl's main).
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <csignal>
#include <iostream>
#include <set>

namespace allox::ctl {

volatile std::sig_atomic_t interrupted = 0;

namespace {

extern "C" void on_sigint(int) {
  interrupted = 1;
}

} // namespace

void catch_interrupts() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; // no SA_RESTART: blocking waits return early
  ::sigaction(SIGINT, &sa, nullptr);
}

void build_app(CLI::App& app, app_state& st, std::function<int()>* run) {
  app.description("alloxctl: the command line of Allox OS (docs/cli.md)");
  app.name("alloxctl");
  // Global flags are accepted after any subcommand too.
  app.fallthrough();
  app.require_subcommand(1);
  app.add_option("--url", st.flags.url,
                 "daemon URL (ALLOX_URL, profile url, " +
                     std::string{default_url} + ")");
  app.add_option("--token", st.flags.token,
                 "bearer token (ALLOX_WORKSPACE_TOKEN, profile token)");
  app.add_option("-o,--output", st.flags.output,
                 "table, json or yaml (ALLOX_OUTPUT, profile output)");
  app.add_option("--profile", st.flags.profile,
                 "configuration profile (ALLOX_PROFILE, current_profile)");
  app.add_option("--agent", st.flags.agent, "agent (default: the context)");
  app.add_option("--session", st.flags.session,
                 "session (default: the context)");
  add_local_commands(app, st, run);
  add_table_commands(app, st, run);
  add_top_command(app, st, run);
  add_flow_commands(app, st, run);
  add_share_commands(app, st, run);
  add_version_command(app, st, run);
  add_mcp_commands(app, st, run);
  add_completion_command(app, st, run);
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::set<std::string> names;
  std::vector<const CLI::App*> todo{&app};
  while (!todo.empty()) {
    const auto* at = todo.back();
    todo.pop_back();
    for (const auto* sub : at->get_subcommands({})) {
      names.insert(sub->get_name());
      todo.push_back(sub);
    }
  }
  return {names.begin(), names.end()};
}

int report(const failure& f) {
  std::cerr << "alloxctl: " << (f.exit == exit_daemon_error ? "error: " : "")
            << f.message << (f.code.empty() ? "" : " (code: " + f.code + ")")
            << "\n";
  return f.exit;
}

result<client*> app_state::daemon() {
  if (conn)
    return conn.get();
  if (cfg.profile.source != "default" &&
      file.profiles.count(cfg.profile.value) == 0)
    return config_error("no profile '" + cfg.profile.value + "' in " +
                        file.path);
  auto where = parse_url(cfg.url.value);
  if (!where)
    return where.error();
  conn = std::make_unique<client>(std::move(*where), cfg.token.value);
  return conn.get();
}

result<json::object> app_state::session_params() const {
  if (cfg.agent.value.empty() || cfg.session.value.empty())
    return usage_error("no session: pass --agent and --session, or set a "
                       "context with `alloxctl use AGENT/SESSION`");
  return json::object{{"agent_id", cfg.agent.value},
                      {"session_id", cfg.session.value}};
}

result<app_state::session_call_t> app_state::session_call() {
  auto params = session_params();
  if (!params)
    return params.error();
  auto d = daemon();
  if (!d)
    return d.error();
  return session_call_t{std::move(*params), *d};
}

} // namespace allox::ctl
