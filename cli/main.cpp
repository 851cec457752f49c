// alloxctl: the command line of Allox OS. Parses the command line, weighs
// flags, environment and the configuration file, and runs one command.
// See docs/cli.md.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdlib>
#include <iostream>

namespace {

const char* getenv_fn(const char* name) {
  return std::getenv(name);
}

} // namespace

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
