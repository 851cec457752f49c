// SPDX-License-Identifier: Apache-2.0
// Session-to-session sharing (share.*, reference 10.2 and its sharing
// tests) on the real store: both sessions must opt in, read-only targets,
// every way out of the scope (.., absolute and dot paths, backslash, NUL,
// symlinks, hard links, FIFOs, a nested subvolume), the 256 KiB limits
// and strict base64, a write undone by the target's rollback, policies
// that survive a restart and a rollback, the audit in the target's trail,
// and the in-guest endpoint with allox-share from real sandboxes.
#include "messages/share.hpp"
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>

using namespace allox;
using namespace allox::test;

namespace {

/// share.<op> by a/`caller` (agent `ca`) with `p`.
http_response share(http_client& c, const std::string& op,
                    const std::string& ca, const std::string& caller,
                    json::object p = {}) {
  return c.rpc("share." + op, with(ids(ca, caller), p));
}

/// The params naming target `ta`/`ts`, plus `extra`.
json::object at(const std::string& ta, const std::string& ts,
                json::object extra = {}) {
  return with({{"target_agent_id", ta}, {"target_session_id", ts}}, extra);
}

void enable(http_client& c, const std::string& a, const std::string& s,
            json::object p = {}) {
  auto r = expect_ok(share(c, "enable", a, s, std::move(p)));
  CHECK(r.at("enabled") == true);
}

/// The error message of a refused request.
std::string error_of(const http_response& r) {
  auto* o = r.json.if_object();
  auto* e = o ? o->if_contains("error") : nullptr;
  return e && e->is_string() ? std::string{e->get_string()} : r.body;
}

/// Expects a refusal with `code` and `message`.
void refused(const http_response& r, const std::string& code,
             const std::string& message) {
  INFO(r.body);
  CHECK(r.status == 400);
  CHECK(r.json.at("code") == json::value(code));
  CHECK(error_of(r) == message);
}

/// Every audit record of `op` in a/s's trail.
json::array audit_of(http_client& c, const std::string& a, const std::string& s,
                     const std::string& op) {
  auto r = expect_ok(
      c.rpc("audit.list", with(ids(a, s), {{"op", op}, {"limit", 1000}})));
  return r.at("events").as_array();
}

std::string sh_out(const std::string& cmd) {
  return std::to_string(std::system(cmd.c_str()));
}

} // namespace

TEST_CASE("share: both sessions must opt in, a disable takes effect at once "
          "and keeps scope and permission") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  for (auto [a, s] : {std::pair{"a", "s"}, {"a", "t"}, {"b", "u"}})
    expect_ok(c.rpc("session.create", ids(a, s)));
  write_file(d.current("a", "t") + "/f", "from t");
  const std::string both = "both Sessions must enable share";
  auto st = expect_ok(share(c, "status", "a", "t"));
  CHECK(st == json::object{{"agent_id", "a"},
                           {"session_id", "t"},
                           {"enabled", false},
                           {"scope", "."},
                           {"permission", "read"}});
  // Neither, only the caller, only the target.
  refused(share(c, "read", "a", "s", at("a", "t", {{"path", "f"}})),
          "forbidden", both);
  enable(c, "a", "s");
  refused(share(c, "read", "a", "s", at("a", "t", {{"path", "f"}})),
          "forbidden", both);
  expect_ok(share(c, "disable", "a", "s"));
  enable(c, "a", "t");
  refused(share(c, "read", "a", "s", at("a", "t", {{"path", "f"}})),
          "forbidden", both);
  // Both: served, within an agent and across agents.
  enable(c, "a", "s");
  auto r = expect_ok(share(c, "read", "a", "s", at("a", "t", {{"path", "f"}})));
  CHECK(r ==
        json::object{{"data_base64", encode_base64("from t")}, {"size", 6}});
  enable(c, "b", "u");
  // current/ holds the session's .allox-tmp too.
  auto l = expect_ok(share(c, "list", "b", "u", at("a", "t")));
  CHECK(l == json::object{
                 {"entries", json::array{json::object{{"name", ".allox-tmp"},
                                                      {"type", "directory"},
                                                      {"size", 0}},
                                         json::object{{"name", "f"},
                                                      {"type", "file"},
                                                      {"size", 6}}}}});
  // A session that does not exist looks like one that never opted in.
  refused(share(c, "list", "a", "s", at("a", "nope")), "forbidden", both);
  refused(share(c, "list", "a", "s", at("nobody", "x")), "forbidden", both);
  // The target opts out: refused from the next request on; its scope and
  // permission stay for the next enable.
  enable(c, "a", "t", {{"scope", "."}, {"permission", "write"}});
  auto off = expect_ok(share(c, "disable", "a", "t"));
  CHECK(off.at("enabled") == false);
  CHECK(off.at("permission") == "write");
  refused(share(c, "read", "a", "s", at("a", "t", {{"path", "f"}})),
          "forbidden", both);
  // Bad parameters are refused before any session.
  refused(share(c, "enable", "a", "s", {{"permission", "all"}}),
          "invalid_argument", "permission must be read or write");
  refused(share(c, "list", "a", "s", {{"target_agent_id", "a"}}),
          "invalid_argument", "missing string parameter: target_session_id");
  refused(share(c, "list", "a", "s", at("../x", "t")), "invalid_argument",
          "invalid agent id: '../x'");
}

TEST_CASE("share: a read-only target refuses writes, binary data round-trips "
          "into a 0600 file, and the target's trail has every attempt but "
          "never the data") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  for (const char* s : {"s", "t"}) {
    expect_ok(c.rpc("session.create", ids("a", s)));
    enable(c, "a", s);
  }
  std::string bin;
  for (int i = 0; i < 256; ++i)
    bin.push_back(static_cast<char>(i));
  auto w = at("a", "t", {{"path", "bin"}, {"data_base64", encode_base64(bin)}});
  refused(share(c, "write", "a", "s", w), "forbidden",
          "target share is read-only");
  CHECK(::access((d.current("a", "t") + "/bin").c_str(), F_OK) != 0);
  enable(c, "a", "t", {{"permission", "write"}});
  CHECK(expect_ok(share(c, "write", "a", "s", w)) ==
        json::object{{"written", 256}});
  auto path = d.current("a", "t") + "/bin";
  CHECK(read_file(path) == bin);
  struct stat sb {
  }, top{};
  REQUIRE(::stat(path.c_str(), &sb) == 0);
  REQUIRE(::stat(d.current("a", "t").c_str(), &top) == 0);
  CHECK((sb.st_mode & 07777) == 0600);
  CHECK(sb.st_uid == top.st_uid); // as the workspace's owner would own it
  auto r =
      expect_ok(share(c, "read", "a", "s", at("a", "t", {{"path", "bin"}})));
  CHECK(r.at("data_base64") == json::value(encode_base64(bin)));
  // Replaced again, the same way (no temporary file left beside it).
  expect_ok(share(
      c, "write", "a", "s",
      at("a", "t", {{"path", "bin"}, {"data_base64", encode_base64("x")}})));
  CHECK(read_file(path) == "x");
  CHECK(expect_ok(share(c, "list", "a", "s", at("a", "t")))
            .at("entries")
            .as_array()
            .size() == 2); // bin and .allox-tmp
  // The target's trail: who, what path, the outcome; the prepared record
  // before the write; nothing of the content.
  auto writes = audit_of(c, "a", "t", "share.write");
  REQUIRE(writes.size() == 3);
  CHECK(writes[0].at("result") == "denied_or_failed");
  CHECK(writes[0].at("error") == "target share is read-only");
  CHECK(writes[1].at("result") == "success");
  CHECK(writes[1].at("caller_agent_id") == "a");
  CHECK(writes[1].at("caller_session_id") == "s");
  CHECK(writes[1].at("path") == "bin");
  CHECK(writes[1].at("size") == 256);
  auto prepared = audit_of(c, "a", "t", "share.write_prepared");
  REQUIRE(prepared.size() == 2);
  CHECK(prepared[0].at("size") == 256);
  CHECK(prepared[0].at("cursor").as_int64() <
        writes[1].at("cursor").as_int64());
  CHECK(audit_of(c, "a", "t", "share.read").size() == 1);
  CHECK(audit_of(c, "a", "t", "share.list").size() == 1);
  // Nothing of it in the caller's trail but its own enable.
  CHECK(audit_of(c, "a", "s", "share.write").empty());
  CHECK(audit_of(c, "a", "s", "share.enable").size() == 1);
  auto enables = audit_of(c, "a", "t", "share.enable");
  REQUIRE(enables.size() == 2);
  CHECK(enables[1].at("permission") == "write");
  CHECK(enables[1].at("enabled") == true);
  auto all =
      expect_ok(c.rpc("audit.list", with(ids("a", "t"), {{"limit", 1000}})));
  CHECK(json::serialize(all).find(encode_base64(bin)) == std::string::npos);
}

TEST_CASE("share: the scope bounds what others reach, and must be a "
          "directory reached without symlinks") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  for (const char* s : {"s", "t"})
    expect_ok(c.rpc("session.create", ids("a", s)));
  auto cur = d.current("a", "t");
  REQUIRE(::mkdir((cur + "/pub").c_str(), 0755) == 0);
  write_file(cur + "/pub/open", "open");
  write_file(cur + "/secret", "secret");
  REQUIRE(::symlink("pub", (cur + "/alias").c_str()) == 0);
  const std::string scope_msg =
      "scope must be an existing directory reachable without symlinks";
  refused(share(c, "enable", "a", "t", {{"scope", "missing"}}), "not_found",
          scope_msg);
  refused(share(c, "enable", "a", "t", {{"scope", "alias"}}),
          "invalid_argument", scope_msg);
  refused(share(c, "enable", "a", "t", {{"scope", "secret"}}),
          "invalid_argument", scope_msg);
  refused(share(c, "enable", "a", "t", {{"scope", "../t"}}), "invalid_argument",
          "absolute paths and dot components are not allowed");
  CHECK(expect_ok(share(c, "status", "a", "t")).at("enabled") == false);
  enable(c, "a", "t", {{"scope", "pub"}});
  enable(c, "a", "s");
  auto r =
      expect_ok(share(c, "read", "a", "s", at("a", "t", {{"path", "open"}})));
  CHECK(r.at("data_base64") == json::value(encode_base64("open")));
  auto l = expect_ok(share(c, "list", "a", "s", at("a", "t", {{"path", "."}})));
  CHECK(l.at("entries").as_array().size() == 1);
  // "secret" is looked for inside the scope, where there is none.
  refused(share(c, "read", "a", "s", at("a", "t", {{"path", "secret"}})),
          "not_found", "shared file unavailable or unsupported");
  // The scope's directory replaced by a symlink later: refused at use.
  REQUIRE(::rename((cur + "/pub").c_str(), (cur + "/pub2").c_str()) == 0);
  REQUIRE(::symlink("pub2", (cur + "/pub").c_str()) == 0);
  refused(share(c, "read", "a", "s", at("a", "t", {{"path", "open"}})),
          "invalid_argument", "shared file unavailable or unsupported");
}

TEST_CASE("share: paths that leave the scope, links, FIFOs and nested "
          "subvolumes are refused for list, read and write, with no "
          "effect") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  for (const char* s : {"s", "t"}) {
    expect_ok(c.rpc("session.create", ids("a", s)));
    enable(c, "a", s, {{"permission", "write"}});
  }
  auto cur = d.current("a", "t");
  write_file(d.current("a", "s") + "/secret", "caller's");
  write_file(cur + "/f", "f");
  REQUIRE(::mkdir((cur + "/dir").c_str(), 0755) == 0);
  write_file(cur + "/dir/g", "g");
  REQUIRE(::symlink("f", (cur + "/link").c_str()) == 0);
  REQUIRE(::symlink("/etc", (cur + "/etc").c_str()) == 0);
  REQUIRE(::symlink("dir", (cur + "/dirlink").c_str()) == 0);
  REQUIRE(::link((cur + "/f").c_str(), (cur + "/hard").c_str()) == 0);
  REQUIRE(::mkfifo((cur + "/fifo").c_str(), 0644) == 0);
  REQUIRE(sh_out("btrfs -q subvolume create " + cur + "/nested") == "0");
  write_file(cur + "/nested/n", "n");
  const std::string dots = "absolute paths and dot components are not allowed";
  const std::string posix = "path must be a relative POSIX path";
  const std::string unavailable = "shared file unavailable or unsupported";
  const std::string links = "only regular files without hard links can be "
                            "shared";
  struct refusal {
    std::string path;
    std::string code;
    std::string message;
  };
  const refusal syntax[] = {
      {"../secret", "invalid_argument", dots},
      {"/etc/passwd", "invalid_argument", dots},
      {"x/../../secret", "invalid_argument", dots},
      {"a//b", "invalid_argument", dots},
      {"./x", "invalid_argument", dots},
      {"dir/", "invalid_argument", dots},
      {"a\\b", "invalid_argument", posix},
      {std::string{"f\0x", 3}, "invalid_argument", posix},
      {"", "invalid_argument", posix},
  };
  for (const auto& x : syntax)
    for (const char* op : {"list", "read", "write"}) {
      CAPTURE(x.path);
      CAPTURE(op);
      refused(
          share(c, op, "a", "s",
                at("a", "t",
                   {{"path", x.path}, {"data_base64", encode_base64("x")}})),
          x.code, x.message);
    }
  // Reading: symlinks (to a file, out of the workspace, to a directory on
  // the way), a hard-linked file, a FIFO (never opened, so never blocks),
  // a directory, a nested subvolume.
  const refusal reads[] = {
      {"link", "invalid_argument", links},
      {"etc/passwd", "invalid_argument", unavailable},
      {"dirlink/g", "invalid_argument", unavailable},
      {"hard", "invalid_argument", links},
      {"fifo", "invalid_argument", links},
      {"dir", "invalid_argument", links},
      {"nested/n", "invalid_argument",
       "cross-filesystem sharing is not supported"},
      {".", "invalid_argument", "read/write requires a file path"},
  };
  for (const auto& x : reads) {
    CAPTURE(x.path);
    refused(share(c, "read", "a", "s", at("a", "t", {{"path", x.path}})),
            x.code, x.message);
  }
  for (const char* p : {"etc", "dirlink", "link", "fifo"}) {
    CAPTURE(p);
    refused(share(c, "list", "a", "s", at("a", "t", {{"path", p}})),
            "invalid_argument", unavailable);
  }
  refused(share(c, "list", "a", "s", at("a", "t", {{"path", "nested"}})),
          "invalid_argument", "cross-filesystem sharing is not supported");
  // Listing shows what is there, links and FIFOs as unsupported.
  auto l = expect_ok(share(c, "list", "a", "s", at("a", "t")));
  std::map<std::string, std::string> types;
  for (const auto& e : l.at("entries").as_array())
    types[std::string{e.at("name").as_string()}] =
        std::string{e.at("type").as_string()};
  CHECK(types["link"] == "unsupported");
  CHECK(types["fifo"] == "unsupported");
  CHECK(types["dir"] == "directory");
  CHECK(types["hard"] == "file");
  // Writing: never over a link, a directory or a special file, never
  // through a symlink or into a nested subvolume.
  const std::string replace = "cannot replace a link, directory or special "
                              "file";
  const refusal writes[] = {
      {"link", "invalid_argument", replace},
      {"hard", "invalid_argument", replace},
      {"fifo", "invalid_argument", replace},
      {"dir", "invalid_argument", replace},
      {"etc/passwd", "invalid_argument", unavailable},
      {"dirlink/new", "invalid_argument", unavailable},
      {"nested/n", "invalid_argument",
       "cross-filesystem sharing is not supported"},
  };
  for (const auto& x : writes) {
    CAPTURE(x.path);
    refused(share(c, "write", "a", "s",
                  at("a", "t",
                     {{"path", x.path}, {"data_base64", encode_base64("w")}})),
            x.code, x.message);
  }
  CHECK(read_file(cur + "/f") == "f");
  CHECK(read_file(cur + "/dir/g") == "g");
  CHECK(read_file(cur + "/nested/n") == "n");
  CHECK(read_file("/etc/passwd").find("root:") == 0);
  CHECK(read_file(d.current("a", "s") + "/secret") == "caller's");
  // Every refusal is in the target's trail.
  auto denied = 0;
  for (const auto& e : audit_of(c, "a", "t", "share.read"))
    denied += e.at("result") == "denied_or_failed";
  CHECK(denied == static_cast<int>(std::size(syntax) + std::size(reads)));
  REQUIRE(sh_out("btrfs -q subvolume delete " + cur + "/nested") == "0");
}

TEST_CASE("share: files and writes are limited to 256 KiB of strict "
          "base64") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  for (const char* s : {"s", "t"}) {
    expect_ok(c.rpc("session.create", ids("a", s)));
    enable(c, "a", s, {{"permission", "write"}});
  }
  auto cur = d.current("a", "t");
  std::string full(share_max_file, 'k');
  write_file(cur + "/full", full);
  write_file(cur + "/over", full + "!");
  auto r =
      expect_ok(share(c, "read", "a", "s", at("a", "t", {{"path", "full"}})));
  CHECK(r.at("size") == static_cast<int64_t>(share_max_file));
  refused(share(c, "read", "a", "s", at("a", "t", {{"path", "over"}})),
          "payload_too_large", "file exceeds 256 KiB");
  auto write = [&](const std::string& b64) {
    return share(c, "write", "a", "s",
                 at("a", "t", {{"path", "w"}, {"data_base64", b64}}));
  };
  CHECK(expect_ok(write(encode_base64(full))).at("written") ==
        static_cast<int64_t>(share_max_file));
  CHECK(read_file(cur + "/w") == full);
  const std::string limit = "write requires base64 data up to 256 KiB";
  refused(write(encode_base64(full + "!")), "payload_too_large", limit);
  refused(write(std::string(share_max_base64 + 4, 'A')), "payload_too_large",
          limit);
  for (const char* bad :
       {"abc", "ab!=", "a===", "=abc", "ab=c", "YQ==YQ==", "YWJj\n"}) {
    CAPTURE(bad);
    refused(write(bad), "invalid_argument", "invalid base64 data");
  }
  refused(share(c, "write", "a", "s", at("a", "t", {{"path", "w"}})),
          "invalid_argument", limit);
  CHECK(read_file(cur + "/w") == full);
  // Empty data makes an empty file.
  CHECK(expect_ok(write("")).at("written") == 0);
  CHECK(read_file(cur + "/w").empty());
}

TEST_CASE("share: a write into a target is undone by the target's rollback, "
          "not the caller's, and is refused during a checkpoint, which reads "
          "wait for") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  for (const char* s : {"s", "t"}) {
    expect_ok(c.rpc("session.create", ids("a", s)));
    enable(c, "a", s, {{"permission", "write"}});
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", s), {{"checkpoint_id", "c1"}})));
  }
  auto cur = d.current("a", "t");
  expect_ok(share(
      c, "write", "a", "s",
      at("a", "t", {{"path", "note"}, {"data_base64", encode_base64("hi")}})));
  // The caller's rollback leaves the target alone.
  expect_ok(c.rpc("session.rollback",
                  with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
  CHECK(read_file(cur + "/note") == "hi");
  expect_ok(c.rpc("session.rollback",
                  with(ids("a", "t"), {{"checkpoint_id", "c1"}})));
  CHECK(::access((cur + "/note").c_str(), F_OK) != 0);
  // The policies are outside the rollback.
  CHECK(expect_ok(share(c, "status", "a", "t")).at("enabled") == true);
  refused(share(c, "read", "a", "s", at("a", "t", {{"path", "note"}})),
          "not_found", "shared file unavailable or unsupported");
  // Disabled, then rolled back: still disabled.
  expect_ok(share(c, "disable", "a", "t"));
  expect_ok(c.rpc("session.rollback",
                  with(ids("a", "t"), {{"checkpoint_id", "c1"}})));
  CHECK(expect_ok(share(c, "status", "a", "t")).at("enabled") == false);
  enable(c, "a", "t", {{"permission", "write"}});
  if (!fault_injection_built(c))
    return;
  // During the target's checkpoint: a write is refused (as file.write is),
  // a read waits on the target's lane for the snapshot and is served.
  write_file(cur + "/r", "r");
  expect_ok(
      c.rpc("debug.fault", fault("a", "t", "checkpoint.create.before_snapshot",
                                 "delay", 1500)));
  auto other = d.new_client();
  auto cp = std::async(std::launch::async, [&] {
    return other->rpc("checkpoint.create",
                      with(ids("a", "t"), {{"checkpoint_id", "c2"}}));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds{400});
  refused(
      share(c, "write", "a", "s",
            at("a", "t", {{"path", "r"}, {"data_base64", encode_base64("x")}})),
      "conflict", "session is being checkpointed or restored: a/t");
  auto started = std::chrono::steady_clock::now();
  auto r = expect_ok(share(c, "read", "a", "s", at("a", "t", {{"path", "r"}})));
  CHECK(r.at("data_base64") == json::value(encode_base64("r")));
  CHECK(std::chrono::steady_clock::now() - started >
        std::chrono::milliseconds{500});
  expect_ok(cp.get());
  CHECK(read_file(cur + "/r") == "r");
}

TEST_CASE("share: policies survive a daemon restart and a session actor "
          "restart") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  for (const char* s : {"s", "t"})
    expect_ok(c.rpc("session.create", ids("a", s)));
  REQUIRE(::mkdir((d.current("a", "t") + "/pub").c_str(), 0755) == 0);
  write_file(d.current("a", "t") + "/pub/f", "f");
  enable(c, "a", "t", {{"scope", "pub"}, {"permission", "write"}});
  enable(c, "a", "s");
  expect_ok(share(c, "disable", "a", "s"));
  REQUIRE(d.stop() == 0);
  d.start();
  auto& c2 = d.client();
  CHECK(expect_ok(share(c2, "status", "a", "t")) ==
        json::object{{"agent_id", "a"},
                     {"session_id", "t"},
                     {"enabled", true},
                     {"scope", "pub"},
                     {"permission", "write"}});
  CHECK(expect_ok(share(c2, "status", "a", "s")).at("enabled") == false);
  enable(c2, "a", "s");
  CHECK(expect_ok(share(c2, "read", "a", "s", at("a", "t", {{"path", "f"}})))
            .at("size") == 1);
  if (!fault_injection_built(c2))
    return;
  // A failed actor is re-spawned from its row, policy included.
  c2.rpc("debug.fault", fault("a", "t", "share.status", "throw"));
  c2.rpc("share.status", ids("a", "t"));
  for (int i = 0; i < 100; ++i) {
    auto r = share(c2, "status", "a", "t");
    if (r.status == 200) {
      CHECK(r.json.at("result").at("scope") == "pub");
      CHECK(r.json.at("result").at("enabled") == true);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
}

TEST_CASE("share: allox-share inside runs shares files between sessions "
          "through the event endpoint, the caller's identity from its cgroup "
          "only") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  for (const char* s : {"s", "t", "u"})
    expect_ok(c.rpc("session.create", ids("a", s)));
  auto run = [&](const std::string& s, const std::string& script) {
    auto id = run_id(sh(c, "a", s, script));
    auto row = wait_done(c, "a", s, id);
    INFO(output(c, "a", s, id, "stderr"));
    return std::pair{output(c, "a", s, id),
                     row.at("root_exit_code").as_int64()};
  };
  const std::string tool = "S=/run/allox/bin/allox-share; ";
  // t opts in for writes; s opts in; u does not.
  auto [t_out, t_code] =
      run("t", tool + "echo t-data > mine && $S enable --permission write");
  CHECK(t_code == 0);
  CHECK(t_out.find(R"("permission":"write")") != std::string::npos);
  auto [s_out, s_code] = run(
      "s", tool +
               "$S enable >/dev/null && $S read a/t mine && "
               "head -c 262144 /dev/urandom > big && $S write a/t big < big && "
               "$S read a/t big | cmp - big && echo same && "
               "$S list a/t && $S status; "
               "$S read a/u x; echo refused=$?; "
               "$S read a/t ../x; echo escape=$?; "
               "$S read bad; echo usage=$?");
  CHECK(s_code == 0);
  CHECK(s_out.find("t-data\n") == 0);
  CHECK(s_out.find(R"({"written":262144})") != std::string::npos);
  CHECK(s_out.find("same\n") != std::string::npos);
  CHECK(s_out.find(R"("name":"big")") != std::string::npos);
  CHECK(s_out.find(R"("enabled":true)") != std::string::npos);
  CHECK(s_out.find("refused=1") != std::string::npos);
  CHECK(s_out.find("escape=1") != std::string::npos);
  CHECK(s_out.find("usage=2") != std::string::npos);
  // What the run wrote is owned as t's own runs' files are.
  struct stat big {
  }, mine{};
  REQUIRE(::stat((d.current("a", "t") + "/big").c_str(), &big) == 0);
  REQUIRE(::stat((d.current("a", "t") + "/mine").c_str(), &mine) == 0);
  CHECK(big.st_uid == mine.st_uid);
  CHECK(big.st_uid != 0);
  // The audit names the caller as the kernel reported it.
  auto writes = audit_of(c, "a", "t", "share.write");
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].at("caller_session_id") == "s");
  // Spoofing: no identity in params, unknown share actions, and a process
  // outside every session.
  auto [spoof, spoof_code] = run("u", R"(python3 - <<'PY'
import json, os, socket
def ask(params, action='share.read'):
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ['ALLOX_EVENTS_SOCKET'])
    s.sendall(json.dumps({'action': action, 'params': params}).encode() + b'\n')
    data = b''
    while not data.endswith(b'\n'):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    r = json.loads(data)
    return r.get('code', 'ok') + ': ' + r.get('error', '')
t = {'target_agent_id': 'a', 'target_session_id': 't', 'path': 'mine'}
print(ask(dict(t, agent_id='a', session_id='s')))
print(ask(dict(t, session_id='u')))
print(ask(dict(t, caller='a/s')))
print(ask({}, 'share.delete'))
print(ask(t))
PY)");
  CHECK(spoof_code == 0);
  CHECK(spoof ==
        "unauthorized: caller identity cannot be supplied by the Agent\n"
        "unauthorized: caller identity cannot be supplied by the Agent\n"
        "unauthorized: caller identity cannot be supplied by the Agent\n"
        "invalid_argument: unknown share action\n"
        "forbidden: both Sessions must enable share\n");
  // u's refused read is in t's trail, with u as the caller.
  auto reads = audit_of(c, "a", "t", "share.read");
  REQUIRE(!reads.empty());
  CHECK(reads.back().at("caller_session_id") == "u");
  CHECK(reads.back().at("result") == "denied_or_failed");
}
