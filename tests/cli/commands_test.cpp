// SPDX-License-Identifier: Apache-2.0
// Golden files of every command in table, json and yaml form: one scenario
// run against a fresh daemon per format; tests/cli/golden/<step>.txt holds
// the command, its exit code and its three outputs. ALLOX_UPDATE_GOLDEN=1
// rewrites them.
#include "tests/cli/ctl.hpp"
#include "tests/fixtures/daemon.hpp"

#include <doctest/doctest.h>

#include <map>
#include <regex>

using namespace allox;
using namespace allox::test;

namespace {

struct step {
  std::vector<std::string> args;
  ctl_result result;
};

/// Runs the scenario in one format; step name -> command and output.
std::map<std::string, step> scenario(const std::string& format) {
  daemon_process d{with_execution()};
  d.start();
  ctl_process c{"http://127.0.0.1:" + std::to_string(d.port())};
  test::temp_dir local;
  write_file(local / "one.txt", "one\n");
  std::map<std::string, step> out;
  std::string run_id, sleeper, lease, reset;
  auto go = [&](const std::string& name, const std::vector<std::string>& args) {
    std::vector<std::string> full{"-o", format};
    full.insert(full.end(), args.begin(), args.end());
    out[name] = {args, c.run(full)};
  };
  // Ids the daemon picks are read back in json form.
  auto id_of = [&](const ctl_result& r, const char* key) {
    auto j = json::parse(r.out.empty() ? "{}" : r.out);
    auto* v = j.is_object() ? j.as_object().if_contains(key) : nullptr;
    return v && v->is_string() ? std::string{v->as_string()} : std::string{};
  };
  auto json_id = [&](std::vector<std::string> args, const char* key) {
    args.insert(args.begin(), {"-o", "json"});
    return id_of(c.run(args), key);
  };
  go("store-initialize", {"store", "initialize"});
  go("agent-create", {"agent", "create", "a"});
  go("agent-list", {"agent", "list"});
  go("agent-describe", {"agent", "describe", "a"});
  go("session-create", {"session", "create", "--agent", "a", "s"});
  go("session-list", {"session", "list", "--agent", "a"});
  go("use", {"use", "a/s"});
  go("current", {"current"});
  go("session-describe", {"session", "describe"});
  go("checkpoint-create", {"checkpoint", "create", "c1", "-m", "first",
                           "--pinned", "--metadata", R"({"k":"v"})"});
  c.run({"run", "--", "sh", "-c", "echo one > a.txt; mkdir d; echo x > d/b"});
  c.run({"checkpoint", "create", "c2", "-m", "second"});
  go("checkpoint-describe", {"checkpoint", "describe", "c1"});
  go("checkpoint-diff", {"checkpoint", "diff", "c1", "--to", "c2"});
  // Runs untracked here: every change says why no writer is named.
  go("checkpoint-diff-writers",
     {"checkpoint", "diff", "c1", "--to", "c2", "--writers"});
  // The checkpoints that changed a path, newest first.
  go("file-history", {"file", "history", "a.txt"});
  go("rollback", {"rollback", "c1"});
  c.run({"checkpoint", "create", "c3", "-m", "branch"});
  c.run({"checkpoint", "create", "c4"});
  go("checkpoint-delete", {"checkpoint", "delete", "c4"});
  go("checkpoint-list", {"checkpoint", "list"});
  go("checkpoint-list-graph", {"checkpoint", "list", "--graph"});
  go("session-configure", {"session", "configure", "--network", "isolated"});
  go("network-status", {"network", "status"});
  go("run", {"run", "--", "sh", "-c", "echo out; echo err >&2; exit 3"});
  {
    // ps lists runs as an array: the first row's id.
    auto r = c.run({"-o", "json", "ps"});
    auto rows = json::parse(r.out);
    const auto& last = rows.as_array().back().as_object();
    run_id = std::string{last.at("run_id").as_string()};
  }
  go("ps", {"ps"});
  go("ps-run", {"ps", run_id});
  go("logs", {"logs", run_id});
  go("logs-stderr", {"logs", run_id, "--stream", "stderr"});
  go("wait", {"wait", run_id});
  go("events", {"events", run_id});
  sleeper = json_id({"run", "-d", "--", "sleep", "30"}, "run_id");
  go("stop", {"stop", sleeper});
  lease = json_id({"lease", "acquire"}, "lease_token");
  go("lease-release", {"lease", "release", lease});
  go("lease-acquire", {"lease", "acquire"});
  c.run({"session", "unfence"});
  go("runtime-register", {"runtime", "register", "--sandbox-id", "sb", "e1"});
  reset = json_id({"runtime", "begin-reset"}, "reset_token");
  go("runtime-complete-reset", {"runtime", "complete-reset", reset});
  go("session-unfence", {"session", "unfence"});
  go("policy-set",
     {"policy", "set", "--auto-checkpoint-turns", "true", "--keep-auto", "5"});
  go("policy-get-agent", {"policy", "get-agent"});
  go("policy-get", {"policy", "get"});
  go("turn-message", {"turn", "message", "-m", "fix the build"});
  go("turn-status", {"turn", "status"});
  c.run({"session", "create", "t"});
  c.run({"--session", "t", "share", "enable", "--permission", "write"});
  go("share-status", {"share", "status"});
  go("share-enable", {"share", "enable"});
  go("share-write",
     {"share", "write", "a/t", "notes.txt", "--data", "shared hello"});
  go("share-list", {"share", "list", "a/t"});
  go("share-read", {"share", "read", "a/t", "notes.txt"});
  go("share-disable", {"share", "disable"});
  go("audit", {"audit", "--agent", "a", "--op", "checkpoint.create"});
  go("dump", {"dump"});
  c.run({"session", "create", "s2"});
  go("session-delete", {"session", "delete", "s2"});
  c.run({"agent", "create", "b"});
  go("agent-delete", {"agent", "delete", "b"});
  go("error-not-found", {"session", "describe", "nope"});
  go("session-fork", {"session", "fork", "s3"});
  go("checkpoint-restore",
     {"checkpoint", "restore", "c1", "--new-session", "s4"});
  // Into s4 (the context now): the positional forms of scp.
  go("file-upload", {"file", "upload", local / "one.txt", "up.txt"});
  go("file-download", {"file", "download", "up.txt", local / "back.txt"});
  go("run-refused", {"run", "list"});
  go("version", {"version"});
  // Without --new-session the new session's id is alloxctl's choice.
  c.run({"use", "a/s"});
  go("checkpoint-restore-auto", {"checkpoint", "restore", "c1"});
  go("clear", {"clear"});
  return out;
}

std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args)
    s +=
        " " +
        (a.find_first_of(" {}\"'>;&") == std::string::npos ? a : "'" + a + "'");
  return s;
}

} // namespace

TEST_CASE("commands: golden table, json and yaml output of every command") {
  const char* formats[] = {"table", "json", "yaml"};
  std::map<std::string, std::map<std::string, step>> by_format;
  for (const char* f : formats)
    by_format[f] = scenario(f);
  for (const auto& [name, table] : by_format["table"]) {
    std::string text = "$ alloxctl" + joined(table.args) + "\n";
    for (const char* f : formats) {
      const auto& r = by_format[f][name].result;
      // A crash is never golden, and the format never changes the outcome.
      INFO(name << " in " << f << ": " << r.err);
      CHECK(r.code < 128);
      CHECK(r.code == table.result.code);
      text += "--- " + std::string{f} + " (exit " + std::to_string(r.code) +
              ")\n" + r.out;
      if (!r.err.empty())
        text += "--- " + std::string{f} + " stderr\n" + r.err;
    }
    // The dump's counters depend on timing; its shape is what matters.
    auto norm = normalise(text);
    if (name == "dump")
      norm = std::regex_replace(norm, std::regex{R"(\d+)"}, "N");
    // A new project version is not a change of output (127.0.0.1 stays).
    if (name == "version")
      norm = std::regex_replace(
          norm, std::regex{R"(([^.\d])\d+\.\d+\.\d+(?![.\d]))"}, "$1X.Y.Z");
    check_golden(name + ".txt", norm);
  }
}
