// SPDX-License-Identifier: Apache-2.0
// allox-turn: publishes turn events from inside a run, over the event
// endpoint at $ALLOX_EVENTS_SOCKET (/run/allox/events.sock). Bound into
// every run at /run/allox/bin/allox-turn, so agent frameworks need
// nothing installed. The daemon knows the caller's session from its
// cgroup; nothing here names one.
//
//   allox-turn start [--runtime-session-id ID]   turn.session_start
//   allox-turn message TEXT                      turn.message
//   allox-turn end [--turn-id T] [--interrupted] [--failed]   turn.end
//   allox-turn status                            turn.status
//   allox-turn policy                            policy.get
//   allox-turn hook          a coding agent's hook payload on stdin:
//     SessionStart -> start (its session_id as runtime_session_id),
//     UserPromptSubmit -> message (its prompt), Stop -> end; every other
//     event is ignored. Never blocks the agent: exit 0 unless the payload
//     is malformed (exit 2), and a hard 5 s timeout.
//
// Prints the reply's result (or error) as one JSON line; exit 0 when the
// daemon answered ok, 1 when it refused, 2 on bad usage or input, 3 when
// the endpoint cannot be reached.
#include "tools/endpoint-client/endpoint_client.hpp"

#include <boost/json.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <string>

namespace json = boost::json;

namespace {

constexpr int timeout_seconds = 5;

/// Hook mode ends quietly (exit 0) at the timeout; set before the alarm.
volatile sig_atomic_t hook_mode = 0;

int usage() {
  std::cerr << "usage: allox-turn start [--runtime-session-id ID] | message "
               "TEXT | end [--turn-id T] [--interrupted] [--failed] | status "
               "| policy | hook\n";
  return 2;
}

/// Sends one request and prints the result (or the error); exit code as
/// above.
int call(const std::string& action, const json::object& params, bool quiet) {
  auto reply = allox::tools::endpoint_request("allox-turn", action, params);
  if (!reply)
    return 3;
  const auto& o = *reply;
  bool ok = o.if_contains("ok") && o.at("ok") == true;
  if (!quiet || !ok)
    (ok ? std::cout : std::cerr)
        << json::serialize(ok ? o.at("result") : json::value(o)) << "\n";
  return ok ? 0 : 1;
}

/// A hook payload on stdin, mapped to a turn event.
int hook() {
  std::string text{std::istreambuf_iterator<char>(std::cin), {}};
  boost::system::error_code ec;
  auto doc = json::parse(text, ec);
  if (ec || !doc.is_object()) {
    std::cerr << "allox-turn hook: stdin is not a JSON object\n";
    return 2;
  }
  const auto& o = doc.as_object();
  auto* event = o.if_contains("hook_event_name");
  if (event == nullptr || !event->is_string()) {
    std::cerr << "allox-turn hook: no hook_event_name\n";
    return 2;
  }
  auto text_of = [&o](const char* key) {
    auto* v = o.if_contains(key);
    return v && v->is_string() ? std::string{v->get_string()} : std::string{};
  };
  std::string name{event->get_string()};
  int rc = 0;
  if (name == "SessionStart") {
    json::object p;
    if (auto id = text_of("session_id"); !id.empty())
      p["runtime_session_id"] = id;
    rc = call("turn.session_start", p, true);
  } else if (name == "UserPromptSubmit") {
    rc = call("turn.message", {{"message", text_of("prompt")}}, true);
  } else if (name == "Stop") {
    rc = call("turn.end", {}, true);
  }
  // A refused or unreachable endpoint is said, but never fails the agent.
  (void)rc;
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  // Never hold up the agent: whatever happens, gone after the timeout.
  if (argc < 2)
    return usage();
  std::string cmd = argv[1];
  hook_mode = cmd == "hook";
  ::signal(SIGALRM, [](int) { ::_exit(hook_mode ? 0 : 3); });
  ::alarm(timeout_seconds);
  json::object p;
  if (cmd == "hook")
    return hook();
  if (cmd == "start") {
    for (int i = 2; i < argc; ++i)
      if (std::strcmp(argv[i], "--runtime-session-id") == 0 && i + 1 < argc)
        p["runtime_session_id"] = argv[++i];
      else
        return usage();
    return call("turn.session_start", p, false);
  }
  if (cmd == "message" && argc == 3)
    return call("turn.message", {{"message", argv[2]}}, false);
  if (cmd == "end") {
    for (int i = 2; i < argc; ++i)
      if (std::strcmp(argv[i], "--turn-id") == 0 && i + 1 < argc)
        p["turn_id"] = argv[++i];
      else if (std::strcmp(argv[i], "--interrupted") == 0)
        p["interrupted"] = true;
      else if (std::strcmp(argv[i], "--failed") == 0)
        p["completed"] = false;
      else
        return usage();
    return call("turn.end", p, false);
  }
  if (cmd == "status" && argc == 2)
    return call("turn.status", p, false);
  if (cmd == "policy" && argc == 2)
    return call("policy.get", p, false);
  return usage();
}
