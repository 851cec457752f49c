// SPDX-License-Identifier: Apache-2.0
// No root inside: runs execute as the sandbox user (--sandbox-user,
// default allox-sandbox) with no capabilities left anywhere, own what
// they create, cannot get root back through a setuid binary, and still do
// ordinary agent work. Trees written by root runs (older stores, or a
// rollback to a checkpoint from then) are handed over at the next run.
#include "tests/fixtures/bulk_client.hpp"
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

using namespace allox;
using namespace allox::test;

namespace {

/// stdout of `sh -c script` in a/s, after checking it exited 0.
std::string run_ok(http_client& c, const std::string& script,
                   const std::string& s = "s") {
  auto id = run_id(sh(c, "a", s, script));
  auto row = wait_done(c, "a", s, id);
  INFO(output(c, "a", s, id, "stderr"));
  CHECK(row.at("root_exit_code") == 0);
  return output(c, "a", s, id);
}

struct sandbox_user {
  sandbox_user() {
    auto* pw = ::getpwnam("allox-sandbox");
    REQUIRE_MESSAGE(pw != nullptr,
                    "scripts/install-deps.sh creates the allox-sandbox user");
    uid = pw->pw_uid;
    gid = pw->pw_gid;
  }
  uid_t uid = 0;
  gid_t gid = 0;
};

struct stat stat_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st;
}

} // namespace

TEST_CASE("sandbox user: runs are the allox-sandbox user with no "
          "capabilities, no groups and no_new_privs, and own what they "
          "create") {
  sandbox_user user;
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto out = run_ok(c, "id -u; id -g; id -G; "
                       "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' "
                       "/proc/self/status; mkdir -p dir; echo x > dir/f");
  auto ids_text = std::to_string(user.uid) + "\n" + std::to_string(user.gid) +
                  "\n" + std::to_string(user.gid) + "\n";
  CHECK(out.rfind(ids_text, 0) == 0);
  INFO(out);
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    CHECK(out.find(std::string{set} + ":\t0000000000000000") !=
          std::string::npos);
  CHECK(out.find("NoNewPrivs:\t1") != std::string::npos);
  for (const char* path : {"/dir", "/dir/f", ""}) {
    auto st = stat_of(d.current("a", "s") + path);
    CHECK(st.st_uid == user.uid);
    CHECK(st.st_gid == user.gid);
  }
}

TEST_CASE("sandbox user: no way back to root: setuid binaries, setuid(0), "
          "/proc/sys, /sys and kernel pointers") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  run_ok(c, "true"); // the workspace is the sandbox user's now
  // A setuid-root copy of id(1), planted by root in the workspace.
  auto planted = d.current("a", "s") + "/suid-id";
  std::filesystem::copy_file("/usr/bin/id", planted);
  REQUIRE(::chown(planted.c_str(), 0, 0) == 0);
  REQUIRE(::chmod(planted.c_str(), 04755) == 0);
  auto out = run_ok(
      c, "./suid-id -u; "
         "python3 -c 'import os; os.setuid(0)' 2>/dev/null || echo no-setuid; "
         "echo x > /proc/sys/kernel/hostname 2>/dev/null || echo no-sysctl; "
         "test -e /sys/kernel && echo sys-present; "
         "mount -t sysfs sysfs /tmp 2>/dev/null && echo mounted; "
         "head -n 3 /proc/kallsyms | cut -c1-16 | sort -u");
  CHECK(out.rfind(std::to_string(::getpwnam("allox-sandbox")->pw_uid) + "\n",
                  0) == 0);
  CHECK(out.find("no-setuid") != std::string::npos);
  CHECK(out.find("no-sysctl") != std::string::npos);
  CHECK(out.find("sys-present") == std::string::npos);
  CHECK(out.find("mounted") == std::string::npos);
  CHECK(out.find("\n0000000000000000\n") != std::string::npos);
}

TEST_CASE("sandbox user: trees root wrote are handed over at the next run, "
          "also after a rollback to a checkpoint from then") {
  sandbox_user user;
  daemon_process d{with_execution({"--sandbox-user", "root"})};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  // Runs as root, as the prototype's did: a tree of root's, checkpointed.
  run_ok(c, "mkdir -p old/deep && echo old > old/deep/f && "
            "ln -s /etc/passwd old/link && echo s > /agent/shared/f");
  auto cp = expect_ok(c.rpc("checkpoint.create", ids("a", "s")));
  auto cp_id = std::string{cp.at("checkpoint_id").as_string()};
  CHECK(stat_of(d.current("a", "s") + "/old/deep/f").st_uid == 0);
  d.stop();
  d.set_extra_args({});
  d.start();
  // The first run as the sandbox user changes root's files.
  run_ok(c, "echo new >> old/deep/f && rm -r old/deep && "
            "echo t >> /agent/shared/f");
  auto link = stat_of(d.current("a", "s") + "/old/link");
  CHECK(link.st_uid == user.uid);            // the link itself
  CHECK(stat_of("/etc/passwd").st_uid == 0); // never its target
  // Back to the checkpoint of root's tree: handed over again.
  expect_ok(c.rpc("session.rollback",
                  with(ids("a", "s"), {{"checkpoint_id", cp_id}})));
  CHECK(stat_of(d.current("a", "s") + "/old/deep/f").st_uid == 0);
  run_ok(c, "echo again >> old/deep/f");
  CHECK(stat_of(d.current("a", "s") + "/old/deep/f").st_uid == user.uid);
}

TEST_CASE("sandbox user: ordinary agent work: git, python and a C "
          "compile") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto out = run_ok(
      c, "git init -q repo && cd repo && echo hi > a.txt && git add a.txt && "
         "git -c user.name=agent -c user.email=agent@example.org commit -qm "
         "first && git log --oneline | wc -l && "
         "python3 -c \"open('p.txt', 'w').write('py')\" && cat p.txt && "
         "printf 'int main(void){return 0;}' > m.c && cc -o m m.c && ./m && "
         "echo compiled");
  CHECK(out == "1\npycompiled\n");
}

TEST_CASE("sandbox user: what file.write and file.mkdir create belongs to "
          "the sandbox user, so runs can change it") {
  sandbox_user user;
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  run_ok(c, "true"); // the workspace is the sandbox user's now
  expect_ok(c.rpc("file.write",
                  with(ids("a", "s"), {{"path", "w.txt"}, {"data", "one\n"}})));
  expect_ok(c.rpc("file.mkdir",
                  with(ids("a", "s"), {{"path", "d/e"}, {"parents", true}})));
  for (const char* path : {"/w.txt", "/d", "/d/e"}) {
    CAPTURE(path);
    CHECK(stat_of(d.current("a", "s") + path).st_uid == user.uid);
    CHECK(stat_of(d.current("a", "s") + path).st_gid == user.gid);
  }
  CHECK(run_ok(c, "echo two >> w.txt && touch d/e/f && cat w.txt") ==
        "one\ntwo\n");
}

TEST_CASE("sandbox user: uploads, one file or a tar tree, belong to the "
          "sandbox user") {
  sandbox_user user;
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  run_ok(c, "true");
  bulk_request file;
  file.target = "/v1/files/a/s/up.txt";
  file.length = 3;
  file.body = from_string("abc");
  REQUIRE(bulk_call(d.port(), file).status == 200);
  temp_dir src;
  REQUIRE(shell("mkdir -p " + src.path() + "/t/sub && echo x > " + src.path() +
                "/t/sub/f") == 0);
  bulk_request tree;
  tree.target = "/v1/files/a/s/tree";
  tree.content_type = "application/x-tar";
  auto data = tar_create(src.path() + "/t");
  tree.length = data.size();
  tree.body = from_string(data);
  REQUIRE(bulk_call(d.port(), tree).status == 200);
  for (std::string path : {"/up.txt", "/tree", "/tree/sub", "/tree/sub/f"}) {
    CAPTURE(path);
    CHECK(stat_of(d.current("a", "s") + path).st_uid == user.uid);
  }
  CHECK(run_ok(c, "echo more >> up.txt && rm -r tree && cat up.txt") ==
        "abcmore\n");
}
