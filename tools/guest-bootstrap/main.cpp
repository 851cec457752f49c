// SPDX-License-Identifier: Apache-2.0
// allox-guest-bootstrap: run by the guest's init before the daemon.
// Checks that this guest can run tracked sessions and prints a JSON
// readiness report on stdout; exits 1 when any check failed.
#include "tracking/readiness.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char** argv) {
  allox::tracking::readiness_options opts;
  bool skip_probe = false;
  CLI::App app{"Checks that this guest can run tracked Allox OS sessions "
               "and prints a JSON readiness report"};
  app.add_option("--cgroup-root", opts.cgroup_root,
                 "the daemon's cgroup v2 subtree (default: <v2 mount>/allox)");
  app.add_option("--bwrap", opts.bwrap, "bubblewrap: a path or a name in PATH")
      ->capture_default_str();
  app.add_flag("--skip-probe", skip_probe,
               "do not load the BPF probe (checks BTF only)");
  CLI11_PARSE(app, argc, argv);
  opts.load_probe = !skip_probe;

  auto report = allox::tracking::check_readiness(opts);
  std::cout << boost::json::serialize(report.to_json()) << std::endl;
  return report.ready ? 0 : 1;
}
