// SPDX-License-Identifier: Apache-2.0
// The in-guest event endpoint, from real sandboxes: allox-turn publishes
// a session's turns with no token and no ids; the caller's session comes
// from its cgroup, and spoofing (another session's ids, an action the
// endpoint does not serve, a process outside every session, an oversized
// line) is refused.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

using namespace allox;
using namespace allox::test;

namespace {

/// `sh -c script` in a/`s`; its stdout, and its exit code.
std::pair<std::string, int64_t> run_sh(http_client& c, const std::string& s,
                                       const std::string& script) {
  auto id = run_id(sh(c, "a", s, script));
  auto row = wait_done(c, "a", s, id);
  INFO(output(c, "a", s, id, "stderr"));
  return {output(c, "a", s, id), row.at("root_exit_code").as_int64()};
}

json::array turn_checkpoints(http_client& c, const std::string& s) {
  json::array out;
  auto list = expect_ok(c.rpc("checkpoint.list", ids("a", s)));
  for (const auto& cp : list.at("checkpoints").as_array())
    if (cp.at("origin") == "turn-lifecycle")
      out.push_back(cp);
  return out;
}

const char* spoof = R"(python3 - <<'PY'
import json, os, socket
def ask(line):
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ['ALLOX_EVENTS_SOCKET'])
    try:
        s.sendall(line)
    except OSError:
        pass  # refused before the whole line was read
    data = b''
    while not data.endswith(b'\n'):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return json.loads(data)['code'] if data else 'closed'
print(ask(b'{"action":"turn.end","params":{"session_id":"other"}}\n'))
print(ask(b'{"action":"turn.end","params":{"agent_id":"b"}}\n'))
print(ask(b'{"action":"checkpoint.create","params":{}}\n'))
print(ask(b'x' * 600000))
print(ask(b'not json\n'))
PY)";

} // namespace

TEST_CASE("event endpoint: allox-turn inside a run publishes its session's "
          "turns, with the reference's results") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(c.rpc("policy.set",
                  with(ids("a", "s"), {{"auto_checkpoint_turns", true}})));
  auto [out, code] = run_sh(
      c, "s",
      "T=/run/allox/bin/allox-turn; $T start --runtime-session-id rt1 && "
      "$T start && $T message 'fix the bug' && $T end --turn-id t1 && "
      "$T end --turn-id t1 && $T status && $T policy");
  CHECK(code == 0);
  CHECK(out.find(R"("skipped":"duplicate")") != std::string::npos);
  CHECK(out.find(R"("turn_count":1)") != std::string::npos);
  CHECK(out.find(R"("auto_checkpoint_turns")") != std::string::npos);
  auto cps = turn_checkpoints(c, "s");
  REQUIRE(cps.size() == 2); // session start and turn 1
  CHECK(cps[1].at("message") == "fix the bug");
  CHECK(cps[0].at("metadata").at("runtime_session_id") == "rt1");
  // Counted in the request metrics as the same actions over /v1/rpc.
  auto metrics = c.request("GET", "/metrics");
  REQUIRE(metrics.status == 200);
  CHECK(metrics.body.find(
            R"(allox_rpc_requests_total{action="turn.end",code="200"} 2)") !=
        std::string::npos);
}

TEST_CASE("event endpoint: other sessions' ids, other actions, oversized "
          "and malformed lines, and processes outside every session are "
          "refused") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  for (const char* s : {"s", "other"})
    expect_ok(c.rpc("session.create", ids("a", s)));
  auto [out, code] = run_sh(c, "s", spoof);
  CHECK(code == 0);
  CHECK(out == "unauthorized\nunauthorized\nunauthorized\npayload_too_large\n"
               "invalid_argument\n");
  // Nothing reached the other session, nor this one.
  CHECK(expect_ok(c.rpc("turn.status", ids("a", "other"))).at("turn_count") ==
        0);
  // This test process is in no session's cgroup: refused at once.
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  auto path = d.runs_dir() + "/events.sock";
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  std::string line = R"({"action":"turn.status","params":{}})"
                     "\n";
  // The daemon may have refused and closed already: no SIGPIPE.
  (void)::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
  char buf[512] = {};
  std::string reply;
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  CHECK(reply.find(R"("code":"unauthorized")") != std::string::npos);
}

TEST_CASE("event endpoint: allox-turn hook maps a coding agent's hook "
          "payloads to turns, ignores other events and never fails the "
          "agent") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(c.rpc("policy.set",
                  with(ids("a", "s"), {{"auto_checkpoint_turns", true}})));
  auto [out, code] = run_sh(
      c, "s",
      "H='/run/allox/bin/allox-turn hook'; "
      "echo '{\"hook_event_name\":\"SessionStart\",\"session_id\":\"cc-1\"}' "
      "| $H && echo '{\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":"
      "\"add tests\"}' | $H && echo '{\"hook_event_name\":\"Notification\"}' "
      "| $H && echo '{\"hook_event_name\":\"Stop\"}' | $H && echo ok; "
      "echo 'not json' | $H; echo malformed=$?");
  CHECK(code == 0);
  CHECK(out == "ok\nmalformed=2\n");
  auto cps = turn_checkpoints(c, "s");
  REQUIRE(cps.size() == 2);
  CHECK(cps[0].at("metadata").at("runtime_session_id") == "cc-1");
  CHECK(cps[1].at("message") == "add tests");
}
