// SPDX-License-Identifier: Apache-2.0
// alloxctl version: the client's version (the CMake project's) and, when
// the daemon answers, the version its system.dump reports. Succeeds also
// when the daemon cannot be asked, and says why.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

#ifndef ALLOX_VERSION
#error "ALLOX_VERSION must name the project's version"
#endif

namespace allox::ctl {

namespace {

int version_command(app_state& st) {
  json::object daemon{{"url", st.cfg.url.value}};
  std::string line; // the daemon's line of the table
  auto d = st.daemon();
  result<json::value> dump = failure{};
  if (d)
    dump = (*d)->rpc("system.dump");
  else
    dump = d.error();
  if (!dump) {
    daemon["reachable"] = dump.error().exit != exit_unreachable;
    daemon["version"] = nullptr;
    daemon["error"] = dump.error().message;
    line = dump.error().exit == exit_unreachable
               ? "not reachable (" + dump.error().message + ")"
               : "unknown (" + dump.error().message + ")";
  } else {
    daemon["reachable"] = true;
    const json::value* version = nullptr;
    if (const auto* o = dump->if_object())
      if (const auto* info = o->if_contains("daemon");
          info && info->is_object())
        version = info->get_object().if_contains("version");
    if (version != nullptr && !version->is_null()) {
      daemon["version"] = *version;
      line = cell(*version) + " at " + st.cfg.url.value;
    } else {
      daemon["version"] = nullptr;
      line = "the daemon at " + st.cfg.url.value + " does not report a version";
    }
  }
  json::object out{{"client", json::object{{"version", ALLOX_VERSION}}},
                   {"daemon", std::move(daemon)}};
  print_result(*st.out, st.st, out, [&] {
    *st.out << "client:  " << ALLOX_VERSION << "\n"
            << "daemon:  " << line << "\n";
  });
  return exit_ok;
}

} // namespace

void add_version_command(CLI::App& app, app_state& st,
                         std::function<int()>* run) {
  auto* v = app.add_subcommand(
      "version", "the client's version and, if it answers, the daemon's");
  v->callback([&st, run] {
    *run = [&st] {
      return version_command(st);
    };
  });
}

} // namespace allox::ctl
