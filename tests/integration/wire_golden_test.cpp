// SPDX-License-Identifier: Apache-2.0
// The native wire, pinned: every action's requests and normalised responses
// against golden files (tests/integration/golden/wire/<action>.txt), so a
// refactoring of the core below the native front cannot change a byte of
// what callers see without the diff showing it. ALLOX_UPDATE_GOLDEN=1
// rewrites the files.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/golden.hpp"
#include "tests/fixtures/json_text.hpp"
#include "tests/fixtures/runs.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>

#ifndef ALLOX_WIRE_GOLDEN_DIR
#error "ALLOX_WIRE_GOLDEN_DIR must name tests/integration/golden/wire"
#endif

using namespace allox;
using namespace allox::test;

namespace {

/// The exchanges of one test, gathered per action; each action's file is
/// checked once the walk is done.
class transcript {
public:
  explicit transcript(http_client& c) : client_(c) {}

  /// Sends `action` with `params`, records the exchange, returns the reply.
  http_response call(const std::string& action, const json::object& params = {},
                     golden_detail detail = golden_detail::values) {
    return call_into(action, action, params, detail);
  }

  /// As call(), recorded in `file` (the same action on another daemon).
  http_response call_into(const std::string& file, const std::string& action,
                          const json::object& params = {},
                          golden_detail detail = golden_detail::values) {
    auto r = client_.rpc(action, params);
    record(file, json::object{{"action", action}, {"params", params}}, r,
           detail);
    return r;
  }

  /// Sends a raw body to POST /v1/rpc and records it under `file`.
  http_response raw(const std::string& file, const std::string& body) {
    auto r = client_.request("POST", "/v1/rpc", body);
    std::string& t = files_[file];
    t += "> " + body + "\n";
    append_reply(t, r, golden_detail::values);
    return r;
  }

  /// The result object of an exchange that must have succeeded.
  static json::object result(const http_response& r) { return expect_ok(r); }

  void check() {
    for (const auto& [name, text] : files_)
      check_golden_file(ALLOX_WIRE_GOLDEN_DIR, name + ".txt", text);
  }

private:
  void record(const std::string& file, const json::object& request,
              const http_response& r, golden_detail detail) {
    std::string& t = files_[file];
    t += "> " + json::serialize(normalise_json(request)) + "\n";
    append_reply(t, r, detail);
  }

  static void append_reply(std::string& t, const http_response& r,
                           golden_detail detail) {
    t += "< " + std::to_string(r.status) + "\n";
    t += pretty_json(normalise_json(r.json, detail)) + "\n";
  }

  http_client& client_;
  std::map<std::string, std::string> files_;
};

} // namespace

TEST_CASE("wire: store, agents, sessions, files, checkpoints, rollback and "
          "fork answer as the golden files say") {
  daemon_process d;
  d.start();
  transcript w{d.client()};
  auto s = ids("a", "s");

  w.call("store.initialize");
  w.call("agent.create", {{"agent_id", "a"}});
  w.call("agent.create", {{"agent_id", "bad id!"}});
  w.call("agent.list");
  w.call("agent.describe", {{"agent_id", "a"}});
  w.call("agent.describe", {{"agent_id", "nobody"}});
  w.call("session.create", s);
  w.call("session.create", s);
  w.call("session.create", ids("a", "t"));
  w.call("session.list", {{"agent_id", "a"}});
  w.call("session.describe", s);
  w.call("session.describe", ids("a", "missing"));

  w.call("file.mkdir", with(s, {{"path", "src/lib"}, {"parents", true}}));
  w.call("file.write", with(s, {{"path", "src/a.txt"}, {"data", "one\n"}}));
  w.call("file.write", with(s, {{"path", "src/b.bin"},
                                {"data", "AAEC"},
                                {"encoding", "base64"},
                                {"mode", 0600}}));
  w.call("file.write",
         with(s, {{"path", "src/a.txt"}, {"data", "two\n"}, {"append", true}}));
  w.call("file.write", with(s, {{"path", "../escape"}, {"data", "x"}}));
  w.call("file.read", with(s, {{"path", "src/a.txt"}}));
  w.call("file.read", with(s, {{"path", "src/b.bin"}, {"encoding", "base64"}}));
  w.call("file.read",
         with(s, {{"path", "src/a.txt"}, {"offset", 2}, {"limit", 3}}));
  w.call("file.read", with(s, {{"path", "src"}}));
  w.call("file.stat", with(s, {{"path", "src/a.txt"}}));
  w.call("file.stat", with(s, {{"path", "nope"}}));
  w.call("file.list", with(s, {{"path", "src"}}));
  w.call("file.list", with(s, {{"recursive", true}, {"limit", 2}}));

  w.call("checkpoint.create", with(s, {{"checkpoint_id", "c1"},
                                       {"message", "first"},
                                       {"metadata", {{"k", "v"}}},
                                       {"pinned", true}}));
  w.call("checkpoint.create", with(s, {{"checkpoint_id", "c1"}}));
  w.call("file.move", with(s, {{"from", "src/a.txt"}, {"to", "src/c.txt"}}));
  w.call("file.move", with(s, {{"from", "src/c.txt"}, {"to", "src/b.bin"}}));
  w.call("file.remove", with(s, {{"path", "src/b.bin"}}));
  w.call("file.remove", with(s, {{"path", "src"}}));
  w.call("checkpoint.create", with(s, {{"checkpoint_id", "c2"}}));
  w.call("checkpoint.list", s);
  w.call("checkpoint.list", with(s, {{"limit", 1}}));
  w.call("checkpoint.describe", with(s, {{"checkpoint_id", "c1"}}));
  w.call("checkpoint.describe", with(s, {{"checkpoint_id", "zz"}}));
  w.call("checkpoint.diff", with(s, {{"from", "c1"}, {"to", "c2"}}));
  w.call("checkpoint.diff", with(s, {{"from", "c1"}}));
  w.call("file.history", with(s, {{"path", "src/c.txt"}}));
  w.call("file.history", with(s, {{"path", "../x"}}));
  w.call("session.rollback", with(s, {{"checkpoint_id", "c1"}}));
  w.call("session.rollback", with(s, {{"num_ancestors", 7}}));
  w.call("session.fork",
         with(s, {{"new_session_id", "f"}, {"checkpoint_id", "c2"}}));
  w.call("session.fork", with(s, {{"new_session_id", "f"}}));
  w.call("checkpoint.delete", with(s, {{"checkpoint_id", "c2"}}));
  w.call("checkpoint.delete", with(s, {{"checkpoint_id", "c1"}}));

  w.call("policy.get", {{"agent_id", "a"}});
  w.call("policy.set", {{"agent_id", "a"}, {"keep_auto", 3}});
  w.call("policy.get", s);
  w.call("policy.set", with(s, {{"auto_checkpoint_turns", true}}));
  w.call("policy.set", with(s, {{"interval_seconds", -1}}));
  w.call("turn.session_start", with(s, {{"runtime_session_id", "rt"}}));
  w.call("turn.session_start", s);
  w.call("turn.message", with(s, {{"message", "fix the build"}}));
  w.call("turn.end", with(s, {{"turn_id", "t1"}}));
  w.call("turn.end", with(s, {{"turn_id", "t1"}}));
  w.call("turn.status", s);

  auto lease = w.result(w.call("execution.acquire", s));
  w.call("execution.acquire", s);
  w.call("checkpoint.create", with(s, {{"checkpoint_id", "busy"}}));
  w.call("execution.release", {{"lease_token", lease.at("lease_token")}});
  w.call("execution.release", {{"lease_token", "unknown"}});
  w.call("runtime.register_background",
         with(s, {{"sandbox_id", "sb"}, {"execution_id", "ex"}}));
  auto reset = w.result(w.call("runtime.begin_reset", s));
  w.call("runtime.complete_reset",
         {{"reset_token", reset.at("reset_token")}, {"success", true}});
  w.call("runtime.complete_reset", {{"reset_token", "unknown"}});
  w.call("session.rollback_after_runtime_reset",
         with(s, {{"checkpoint_id", "turn-0"}}));
  w.call("session.unfence", s);

  w.call("share.status", s);
  w.call("share.enable", with(ids("a", "t"), {{"permission", "write"}}));
  w.call("share.enable", with(s, {{"scope", "missing-dir"}}));
  w.call("share.write", with(s, {{"target_agent_id", "a"},
                                 {"target_session_id", "t"},
                                 {"path", "shared.txt"},
                                 {"data_base64", "aGk="}}));
  w.call("share.list",
         with(s, {{"target_agent_id", "a"}, {"target_session_id", "t"}}));
  w.call("share.read", with(s, {{"target_agent_id", "a"},
                                {"target_session_id", "t"},
                                {"path", "shared.txt"}}));
  w.call("share.disable", ids("a", "t"));
  w.call("share.read", with(s, {{"target_agent_id", "a"},
                                {"target_session_id", "t"},
                                {"path", "shared.txt"}}));

  w.call("audit.list", {{"agent_id", "a"}, {"session_id", "s"}, {"limit", 5}});
  w.call("audit.list", {{"limit", 0}});
  // Without --process-audit-root: no tracked execution.
  w.call_into("no-execution", "process.status");
  w.call_into("no-execution", "process.start",
              with(s, {{"argv", json::array{"true"}}}));
  w.call("system.dump", {}, golden_detail::shape);

  auto f = ids("a", "f");
  w.call("file.search", with(f, {{"pattern", "two"}}));
  w.call("file.search",
         with(f, {{"pattern", "^o.e$"}, {"regex", true}, {"glob", "*.txt"}}));
  w.call("file.search", with(f, {{"glob", "src/*.txt"}}));
  w.call("file.search", with(f, {{"pattern", "("}, {"regex", true}}));
  w.call("file.replace", with(f, {{"path", "src/c.txt"},
                                  {"old_string", "two"},
                                  {"new_string", "three"}}));
  w.call("file.replace", with(f, {{"path", "src/c.txt"},
                                  {"old_string", "nope"},
                                  {"new_string", ""}}));
  w.call("session.delete", f);
  w.call("session.delete", f);
  w.call("agent.delete", {{"agent_id", "a"}});
  w.call("agent.list");

  w.call("no.such_action");
  w.raw("envelope", R"({"params":{}})");
  w.raw("envelope", "[1,2]");
  w.raw("envelope", "{not json");
  w.raw("envelope", R"({"action":"agent.list","params":[1]})");
  w.check();
}

TEST_CASE("wire: runs, their output, events and configuration answer as the "
          "golden files say") {
  daemon_process d{with_execution()};
  d.start();
  transcript w{d.client()};
  auto s = ids("a", "r");
  expect_ok(d.client().rpc("session.create", s));

  w.call("process.status", {}, golden_detail::shape);
  w.call("tracker.status", {}, golden_detail::shape);
  w.call("session.configure", with(s, {{"max_runs", 4}}));
  w.call("session.configure", with(s, {{"network", "sideways"}}));
  w.call("session.configure", with(s, {{"limits", {{"memory.max", "64M"}}}}));
  w.call("session.configure", with(s, {{"limits", {{"swap.max", "0"}}}}));
  w.call("network.configure", with(s, {{"mode", "isolated"}}));
  w.call("network.status", s);

  auto row = w.result(w.call(
      "process.start", with(s, {{"argv", json::array{"sh", "-c",
                                                     "echo out; echo err >&2; "
                                                     "exit 3"}},
                                {"env", {{"GREETING", "hi"}}}})));
  auto id = run_id(row);
  w.call("process.wait", with(s, {{"run_id", id}, {"timeout_ms", 10000}}));
  w.call("process.get", with(s, {{"run_id", id}}));
  w.call("process.get", with(s, {{"run_id", "0123"}}));
  w.call("process.output", with(s, {{"run_id", id}}));
  w.call("process.output", with(s, {{"run_id", id},
                                    {"stream", "stderr"},
                                    {"offset", 1},
                                    {"limit", 2}}));
  w.call("process.events", with(s, {{"run_id", id}}), golden_detail::shape);
  w.call("process.tree", with(s, {{"run_id", id}}), golden_detail::shape);
  w.call("process.list", s);
  w.call("process.list", with(s, {{"limit", 1}}));
  w.call("process.start", with(s, {{"argv", json::array{}}}));

  auto cat = run_id(w.result(
      w.call("process.start",
             with(s, {{"argv", json::array{"cat"}}, {"stdin", true}}))));
  w.call("process.input", with(s, {{"run_id", cat}, {"data", "typed\n"}}));
  w.call("process.input", with(s, {{"run_id", cat}, {"eof", true}}));
  w.call("process.wait", with(s, {{"run_id", cat}, {"timeout_ms", 10000}}));
  w.call("process.output", with(s, {{"run_id", cat}}));

  auto tty = run_id(w.result(w.call(
      "process.start", with(s, {{"argv", json::array{"sleep", "30"}},
                                {"pty", {{"rows", 30}, {"cols", 100}}}}))));
  w.call("process.resize",
         with(s, {{"run_id", tty}, {"rows", 40}, {"cols", 120}}));
  w.call("process.resize", with(s, {{"run_id", tty}, {"rows", 0}}));
  w.call("session.pause", with(s, {{"message", "held"}}));
  w.call("session.pause", s);
  w.call("process.start", with(s, {{"argv", json::array{"true"}}}));
  w.call("session.usage", s, golden_detail::shape);
  w.call("session.resume", s);
  w.call("session.resume", s);
  w.call("process.stop", with(s, {{"run_id", tty}}));
  w.call("process.stop", with(s, {{"run_id", "0123"}}));
  w.check();
}
