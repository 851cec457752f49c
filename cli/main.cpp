// SPDX-License-Identifier: Apache-2.0
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
  CLI::App app;
  std::function<int()> run;
  build_app(app, st, &run);
  st.argv.assign(argv + 1, argv + argc);
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
