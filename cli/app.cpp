// What every alloxctl command shares: the daemon connection made on first
// use, the session a command names, Ctrl-C, and how a failure is printed.
// Kept out of main.cpp so that the library links on its own (the tests
// link it without alloxctl's main).
#include "cli/commands.hpp"

#include <csignal>
#include <iostream>

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
