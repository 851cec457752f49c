// SPDX-License-Identifier: Apache-2.0
// alloxctl as people type it: scp's positional form of file transfers,
// `run` guarding against a mistyped subcommand, `version`, shell
// completion and `checkpoint restore` choosing the new session itself.
#include "cli/commands.hpp"
#include "tests/cli/ctl.hpp"
#include "tests/fixtures/daemon.hpp"

#include <CLI/CLI.hpp>
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <regex>

using namespace allox;
using namespace allox::test;

namespace {

std::string daemon_url(const daemon_process& d) {
  return "http://127.0.0.1:" + std::to_string(d.port());
}

/// Session a/s, made the context of `c`.
void make_session(ctl_process& c) {
  REQUIRE(c.run({"session", "create", "--agent", "a", "s"}).code == 0);
  REQUIRE(c.run({"use", "a/s"}).code == 0);
}

/// What `sh -c command` prints on stdout; its exit status in `*code`.
std::string shell(const std::string& command, int* code = nullptr) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  while (auto n = std::fread(buf, 1, sizeof buf, p))
    out.append(buf, n);
  int status = ::pclose(p);
  if (code != nullptr)
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

/// The version in the top-level CMakeLists.txt's project().
std::string project_version() {
  auto text =
      read_file(std::string{ALLOX_GOLDEN_DIR} + "/../../../CMakeLists.txt");
  std::smatch m;
  REQUIRE(
      std::regex_search(text, m, std::regex{R"(project\(\S+ VERSION (\S+))"}));
  return m[1];
}

} // namespace

TEST_CASE("usage: file upload LOCAL REMOTE and file download REMOTE LOCAL, "
          "as scp does") {
  daemon_process d;
  d.start();
  ctl_process c{daemon_url(d)};
  make_session(c);
  test::temp_dir local;
  test::write_file(local / "one.txt", "one");
  ::mkdir((local / "tree").c_str(), 0755);
  test::write_file(local / "tree/y.txt", "y");
  auto up = c.run({"file", "upload", local / "one.txt", "remote.txt"});
  INFO(up.err);
  CHECK(up.code == 0);
  CHECK(test::read_file(d.current("a", "s") + "/remote.txt") == "one");
  CHECK(c.run({"file", "upload", "-r", local / "tree", "t2"}).code == 0);
  CHECK(test::read_file(d.current("a", "s") + "/t2/y.txt") == "y");
  // A destination ending in '/' keeps the file's name.
  CHECK(c.run({"file", "upload", local / "one.txt", "t2/"}).code == 0);
  CHECK(test::read_file(d.current("a", "s") + "/t2/one.txt") == "one");

  auto down = c.run({"file", "download", "remote.txt", local / "back.txt"});
  INFO(down.err);
  CHECK(down.code == 0);
  CHECK(test::read_file(local / "back.txt") == "one");
  // Into a local directory that exists: the file's own name inside it.
  ::mkdir((local / "into").c_str(), 0755);
  CHECK(c.run({"file", "download", "t2/one.txt", local / "into"}).code == 0);
  CHECK(test::read_file(local / "into/one.txt") == "one");
  CHECK(c.run({"file", "download", "-r", "t2", local / "t3"}).code == 0);
  CHECK(test::read_file(local / "t3/y.txt") == "y");
  // The option forms still work; both forms at once are a usage error.
  CHECK(c.run({"file", "upload", local / "one.txt", "--path", "o2"}).code == 0);
  CHECK(c.run({"file", "download", "o2", "--to", local / "o3"}).code == 0);
  CHECK(test::read_file(local / "o3") == "one");
  auto both = c.run({"file", "upload", local / "one.txt", "x", "--path", "y"});
  CHECK(both.code == 2);
  CHECK(both.out.empty());
}

TEST_CASE("usage: run refuses a subcommand's name as the program unless -- "
          "comes first") {
  daemon_process d{with_execution()};
  d.start();
  ctl_process c{daemon_url(d)};
  make_session(c);
  auto list = c.run({"run", "list"});
  CHECK(list.code == 2);
  CHECK(list.out.empty());
  CHECK(list.err == "alloxctl: run: 'list' is an alloxctl subcommand; to run "
                    "a program of that name, put -- before it: alloxctl run "
                    "-- list ...\n");
  CHECK(c.run({"run", "-d", "ps"}).code == 2);
  CHECK(c.run({"run", "--env", "A=1", "checkpoint", "x"}).code == 2);
  CHECK(c.run({"run", "diff", "/dev/null", "/dev/null"}).code == 2);
  // Nothing was started.
  auto none = c.run({"-o", "json", "ps"});
  CHECK(json::parse(none.out).as_array().empty());
  // After -- the word is the program's, whatever it is called.
  auto dashed = c.run({"run", "--", "diff", "/dev/null", "/dev/null"});
  INFO(dashed.err);
  CHECK(dashed.code == 0);
  CHECK(json::parse(c.run({"-o", "json", "ps"}).out).as_array().size() == 1);
  // Other programs need no --, and their arguments may be anything.
  auto echo = c.run({"run", "echo", "list"});
  CHECK(echo.code == 0);
  CHECK(echo.out == "list\n");
}

TEST_CASE("usage: version prints the client's and asks the daemon for its "
          "own") {
  auto version = project_version();
  daemon_process d;
  d.start();
  ctl_process c{daemon_url(d)};
  auto table = c.run({"version"});
  CHECK(table.code == 0);
  CHECK(normalise(table.out) ==
        "client:  " + version +
            "\ndaemon:  the daemon at http://127.0.0.1:PORT does not report "
            "a version\n");
  auto j = c.run({"-o", "json", "version"});
  CHECK(j.code == 0);
  auto o = json::parse(j.out).as_object();
  const auto& daemon = o.at("daemon").as_object();
  CHECK(o.at("client").as_object().at("version") == json::value(version));
  CHECK(daemon.at("reachable") == json::value(true));
  CHECK(daemon.at("version").is_null());
  // No daemon: still exit 0, and it says so.
  ctl_process gone{"http://127.0.0.1:" + std::to_string(free_port())};
  auto alone = gone.run({"version"});
  CHECK(alone.code == 0);
  CHECK(alone.out.rfind("client:  " + version + "\n", 0) == 0);
  CHECK(alone.out.find("daemon:  not reachable (cannot reach the daemon at "
                       "http://127.0.0.1:") != std::string::npos);
  auto yaml = gone.run({"-o", "yaml", "version"});
  CHECK(yaml.code == 0);
  CHECK(yaml.out.find("reachable: false") != std::string::npos);
}

TEST_CASE("usage: completion scripts cover the whole command tree") {
  ctl_process c;
  auto bash = c.run({"completion", "bash"});
  REQUIRE(bash.code == 0);
  auto zsh = c.run({"completion", "zsh"});
  REQUIRE(zsh.code == 0);
  CHECK(zsh.out.rfind("#compdef alloxctl\n", 0) == 0);
  CHECK(c.run({"completion", "fish"}).code == 2);
  // Every command of the tree the parser uses, at its place.
  CLI::App app;
  ctl::app_state st;
  std::function<int()> run;
  ctl::build_app(app, st, &run);
  std::vector<std::pair<const CLI::App*, std::string>> todo{{&app, ""}};
  size_t seen = 0;
  while (!todo.empty()) {
    auto [at, path] = todo.back();
    todo.pop_back();
    for (const auto* sub : at->get_subcommands({})) {
      auto sub_path = path + " " + sub->get_name();
      INFO(sub_path);
      CHECK(bash.out.find("\"" + sub_path + "\") words=") != std::string::npos);
      CHECK(zsh.out.find("(\"" + sub_path + "\")") != std::string::npos);
      CHECK(zsh.out.find("'" + sub->get_name() + ":") != std::string::npos);
      todo.emplace_back(sub, sub_path);
      ++seen;
    }
  }
  CHECK(seen > 60);
  test::temp_dir dir;
  write_file(dir / "alloxctl.bash", bash.out);
  int code = -1;
  shell("bash -n " + (dir / "alloxctl.bash") + " 2>&1", &code);
  CHECK(code == 0);
  // And bash completes with it.
  auto complete = [&](const std::string& words) {
    return shell("bash -c 'source " + (dir / "alloxctl.bash") +
                 "; COMP_WORDS=(" + words +
                 "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _alloxctl; "
                 "echo \"${COMPREPLY[*]}\"'");
  };
  CHECK(complete("alloxctl comp") == "completion\n");
  CHECK(complete("alloxctl checkpoint re") == "restore\n");
  CHECK(complete("alloxctl -o json checkpoint restore --new") ==
        "--new-session\n");
  CHECK(complete("alloxctl --session s2 file up") == "upload\n");

  // zsh, where it is installed (scripts/install-deps does not bring it).
  int no_zsh = -1;
  shell("command -v zsh >/dev/null", &no_zsh);
  if (no_zsh != 0) {
    MESSAGE("zsh is not installed: the zsh script is not tried");
    return;
  }
  write_file(dir / "_alloxctl", zsh.out);
  shell("zsh -n " + (dir / "_alloxctl") + " 2>&1", &code);
  CHECK(code == 0);
  // Outside the completion system: _describe and _files print what they
  // would offer (the words of the entries that match the prefix).
  write_file(dir / "driver.zsh",
             "compdef() { :; }\n"
             "_files() { print FILES; }\n"
             "_describe() { print -l -- ${(M)${(@)${(P)4}%%:*}:#$PREFIX*}; }\n"
             "source " + (dir / "_alloxctl") + "\n"
             "words=(\"$@\"); CURRENT=$#words; PREFIX=${words[CURRENT]}\n"
             "_alloxctl\n");
  auto zcomplete = [&](const std::string& words) {
    return shell("zsh " + (dir / "driver.zsh") + " " + words);
  };
  CHECK(zcomplete("alloxctl comp") == "completion\n");
  CHECK(zcomplete("alloxctl -o json checkpoint restore --new") ==
        "--new-session\n");
  CHECK(zcomplete("alloxctl file upload --path ''") == "FILES\n");
}

TEST_CASE("usage: checkpoint restore without --new-session names the new "
          "session itself") {
  daemon_process d;
  d.start();
  ctl_process c{daemon_url(d)};
  make_session(c);
  REQUIRE(c.run({"checkpoint", "create", "c1"}).code == 0);
  auto first = c.run({"checkpoint", "restore", "c1"});
  INFO(first.err);
  CHECK(first.code == 0);
  CHECK(first.out.find("created session: a/s-c1\ncontext: a/s-c1\n") !=
        std::string::npos);
  CHECK(c.run({"current"}).out == "a/s-c1  (profile default)\n");
  // Taken names are skipped.
  REQUIRE(c.run({"use", "a/s"}).code == 0);
  auto second = c.run({"-o", "json", "checkpoint", "restore", "c1"});
  CHECK(second.code == 0);
  CHECK(json::parse(second.out).as_object().at("session_id") ==
        json::value("s-c1-2"));
  CHECK(c.run({"current"}).out == "a/s-c1-2  (profile default)\n");
  // A named one as before, and errors are the daemon's.
  REQUIRE(c.run({"use", "a/s"}).code == 0);
  auto named = c.run({"checkpoint", "restore", "c1", "--new-session", "n"});
  CHECK(named.code == 0);
  CHECK(named.out.find("created session") == std::string::npos);
  CHECK(c.run({"current"}).out == "a/n  (profile default)\n");
  REQUIRE(c.run({"use", "a/s"}).code == 0);
  auto missing = c.run({"checkpoint", "restore", "nope"});
  CHECK(missing.code == 1);
  CHECK(c.run({"current"}).out == "a/s  (profile default)\n");
}
