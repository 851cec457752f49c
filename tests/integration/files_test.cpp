// SPDX-License-Identifier: Apache-2.0
// file.* on the real store: round trips, and every way out of the
// workspace refused with a clear error and no side effect.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

using namespace allox;
using namespace allox::test;

namespace {

http_response call(http_client& c, const std::string& action, json::object p) {
  return c.rpc(action, with(ids("a", "s"), p));
}

json::object ok(http_client& c, const std::string& action, json::object p) {
  return expect_ok(call(c, action, std::move(p)));
}

} // namespace

TEST_CASE("files: write, read, list, move and remove round-trip") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_error(call(c, "file.write", {{"path", "notes/a.txt"}, {"data", "x"}}),
               400, "not_found"); // the parent must exist
  ok(c, "file.mkdir", {{"path", "notes/deep/er"}, {"parents", true}});
  ok(c, "file.write", {{"path", "notes/a.txt"}, {"data", "hello "}});
  ok(c, "file.write",
     {{"path", "notes/a.txt"}, {"data", "world"}, {"append", true}});
  CHECK(read_file(d.current("a", "s") + "/notes/a.txt") == "hello world");
  auto r = ok(c, "file.read", {{"path", "notes/a.txt"}, {"offset", 6}});
  CHECK(r.at("data") == "world");
  CHECK(r.at("eof") == true);
  // Binary data through base64, with a mode.
  std::string bin{"\0\x01\xff\x7f", 4};
  ok(c, "file.write",
     {{"path", "notes/deep/bin"},
      {"data", "AAH/fw=="},
      {"encoding", "base64"},
      {"mode", 0600}});
  CHECK(read_file(d.current("a", "s") + "/notes/deep/bin") == bin);
  auto b =
      ok(c, "file.read", {{"path", "notes/deep/bin"}, {"encoding", "base64"}});
  CHECK(b.at("data") == "AAH/fw==");
  auto st = ok(c, "file.stat", {{"path", "notes/deep/bin"}});
  CHECK(st.at("type") == "file");
  CHECK(st.at("mode") == 0600);
  CHECK(st.at("size") == 4);
  // Listing, all levels, in pages.
  std::vector<std::string> seen;
  json::object p{{"path", "notes"}, {"recursive", true}, {"limit", 2}};
  for (int i = 0; i < 10; ++i) {
    auto page = ok(c, "file.list", p);
    for (const auto& e : page.at("entries").as_array())
      seen.emplace_back(e.at("path").as_string());
    if (!page.at("has_more").as_bool())
      break;
    p["cursor"] = page.at("next_cursor");
  }
  CHECK(seen == std::vector<std::string>{"notes/a.txt", "notes/deep",
                                         "notes/deep/bin", "notes/deep/er"});
  // Moves never overwrite.
  ok(c, "file.write", {{"path", "b.txt"}, {"data", "b"}});
  expect_error(call(c, "file.move", {{"from", "b.txt"}, {"to", "notes/a.txt"}}),
               400, "already_exists");
  ok(c, "file.move", {{"from", "b.txt"}, {"to", "notes/b.txt"}});
  CHECK(read_file(d.current("a", "s") + "/notes/b.txt") == "b");
  // Unless asked to replace a file, in one rename; a directory stays.
  ok(c, "file.write", {{"path", "c.txt"}, {"data", "c"}});
  ok(c, "file.move",
     {{"from", "c.txt"}, {"to", "notes/b.txt"}, {"replace", true}});
  CHECK(read_file(d.current("a", "s") + "/notes/b.txt") == "c");
  CHECK(::access((d.current("a", "s") + "/c.txt").c_str(), F_OK) != 0);
  ok(c, "file.write", {{"path", "c.txt"}, {"data", "c"}});
  expect_error(
      call(c, "file.move",
           {{"from", "c.txt"}, {"to", "notes/deep"}, {"replace", true}}),
      400, "invalid_argument");
  ok(c, "file.remove", {{"path", "c.txt"}});
  expect_error(call(c, "file.remove", {{"path", "notes"}}), 400, "conflict");
  auto rm = ok(c, "file.remove", {{"path", "notes"}, {"recursive", true}});
  CHECK(rm.at("removed") == 6);
  CHECK(::access((d.current("a", "s") + "/notes").c_str(), F_OK) != 0);
  // The agent's shared area, by its prefix.
  ok(c, "file.write", {{"path", "@shared/common.txt"}, {"data", "shared"}});
  CHECK(read_file(d.root() + "/agents/a/workspace/shared/common.txt") ==
        "shared");
  expect_error(call(c, "file.move",
                    {{"from", "@shared/common.txt"}, {"to", "common.txt"}}),
               400, "invalid_argument");
  // Checkpoints capture what was written; audit says who wrote.
  auto audit =
      expect_ok(c.rpc("audit.list", {{"agent_id", "a"}, {"op", "file.write"}}));
  CHECK(audit.at("events").as_array().size() == 7);
}

TEST_CASE("files: paths out of the workspace are refused, with no effect") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto cur = d.current("a", "s");
  auto refused = [&](const std::string& action, json::object p) {
    auto r = call(c, action, p);
    CHECK(r.status == 400);
    return std::string{r.json.at("error").as_string()};
  };
  CHECK(refused("file.read", {{"path", "../../../../etc/passwd"}})
            .find("leaves the workspace") != std::string::npos);
  CHECK(refused("file.read", {{"path", "/etc/passwd"}}).find("relative") !=
        std::string::npos);
  CHECK(refused("file.write", {{"path", "a/../../x"}, {"data", "x"}})
            .find("leaves the workspace") != std::string::npos);
  // Symlinks leading out, absolute or relative.
  REQUIRE(::symlink("/etc", (cur + "/etc-link").c_str()) == 0);
  REQUIRE(::symlink("../../../../../..", (cur + "/up").c_str()) == 0);
  CHECK(refused("file.read", {{"path", "etc-link/passwd"}})
            .find("leaves the workspace") != std::string::npos);
  CHECK(refused("file.read", {{"path", "up/etc/passwd"}})
            .find("leaves the workspace") != std::string::npos);
  CHECK(refused("file.write", {{"path", "etc-link/allox-x"}, {"data", "x"}})
            .find("leaves the workspace") != std::string::npos);
  CHECK(::access("/etc/allox-x", F_OK) != 0);
  CHECK(refused("file.list", {{"path", "etc-link"}})
            .find("leaves the workspace") != std::string::npos);
  // A final symlink is replaced by a write, never written through.
  REQUIRE(::symlink("/etc/hostname", (cur + "/host").c_str()) == 0);
  auto hostname = read_file("/etc/hostname");
  CHECK(refused("file.read", {{"path", "host"}}).find("leaves the workspace") !=
        std::string::npos);
  ok(c, "file.write", {{"path", "host"}, {"data", "mine"}});
  CHECK(read_file("/etc/hostname") == hostname);
  CHECK(read_file(cur + "/host") == "mine");
  // A FIFO is refused at once instead of blocking the reader.
  REQUIRE(::mkfifo((cur + "/pipe").c_str(), 0600) == 0);
  CHECK(refused("file.read", {{"path", "pipe"}}).find("not a regular file") !=
        std::string::npos);
  CHECK(
      refused("file.write", {{"path", "pipe"}, {"data", "x"}, {"append", true}})
          .find("not a regular file") != std::string::npos);
  // Appending through a second hard link would change the other name too.
  write_file(cur + "/orig", "o");
  REQUIRE(::link((cur + "/orig").c_str(), (cur + "/second").c_str()) == 0);
  CHECK(refused("file.write",
                {{"path", "second"}, {"data", "x"}, {"append", true}})
            .find("hard links") != std::string::npos);
  CHECK(read_file(cur + "/orig") == "o");
  // Removing a symlink removes the link, not its target.
  ok(c, "file.remove", {{"path", "etc-link"}});
  CHECK(::access("/etc/passwd", F_OK) == 0);
  // A sandboxed process swapping a directory for a symlink to /etc while
  // we read through it: the kernel checks each resolution, so no read
  // ever returns the host's file.
  auto run = run_id(sh(c, "a", "s",
                       "while true; do mkdir -p d; echo inside > d/passwd; "
                       "rm -rf d; ln -s /etc d; rm -f d; done"));
  int inside = 0;
  for (int i = 0; i < 300; ++i) {
    auto r = call(c, "file.read", {{"path", "d/passwd"}});
    if (r.status == 200) {
      auto data = std::string{r.json.at("result").at("data").as_string()};
      CHECK(data.find("root:") == std::string::npos);
      inside += data == "inside\n";
    }
  }
  MESSAGE("reads that found the sandbox's file: " << inside);
  expect_ok(c.rpc("process.stop", with(ids("a", "s"), {{"run_id", run}})));
  expect_error(call(c, "file.remove", {{"path", ""}}), 400, "invalid_argument");
}
