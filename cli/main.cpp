// alloxctl: the command line of Allox OS. Parses the command line, weighs
// flags, environment and the configuration file, and runs one command.
// See docs/cli.md.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdlib>
#include <iostream>

namespace allox::ctl {

volatile std::sig_atomic_t interrupted = 0;

namespace {

extern "C" void on_sigint(int) {
  interrupted = 1;
}

const char* getenv_fn(const char* name) {
  return std::getenv(name);
}

} // namespace

void catch_interrupts() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; // no SA_RESTART: blocking waits return early
  ::sigaction(SIGINT, &sa, nullptr);
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

int main(int argc, char** argv) {
  using namespace allox::ctl;
  app_state st;
  st.out = &std::cout;
  CLI::App app{"alloxctl: the command line of Allox OS (docs/cli.md)",
               "alloxctl"};
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
  std::function<int()> run;
  add_local_commands(app, st, &run);
  add_table_commands(app, st, &run);
  add_flow_commands(app, st, &run);
  add_share_commands(app, st, &run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? exit_ok : exit_usage;
  }
  auto file = load_config(config_path(getenv_fn));
  if (!file)
    return report(file.error());
  st.file = std::move(*file);
  auto cfg = resolve(st.flags, getenv_fn, st.file);
  if (!cfg)
    return report(cfg.error());
  st.cfg = std::move(*cfg);
  st.st.format = st.cfg.output.value == "json"   ? output_format::json
                 : st.cfg.output.value == "yaml" ? output_format::yaml
                                                 : output_format::table;
  bool table = st.st.format == output_format::table;
  st.st.colour = table && ::isatty(1) && std::getenv("NO_COLOR") == nullptr;
  st.st.progress = table && ::isatty(2);
  if (!run)
    return exit_usage;
  return run();
}
