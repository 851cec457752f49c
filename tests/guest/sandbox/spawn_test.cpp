// SPDX-License-Identifier: Apache-2.0
// Starting a process straight into a cgroup, on the real kernel: the
// child shares the daemon's memory until it execs (CLONE_VM |
// CLONE_VFORK), so what it inherits and what it hands back are checked
// here rather than trusted.
#include "guest/sandbox/spawn.hpp"

#include "guest/os/cgroup.hpp"
#include "tests/fixtures/cgroup_subtree.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

using namespace allox;

namespace {

/// A group of the subtree, open for spawn_in_cgroup.
struct spawn_group {
  spawn_group() {
    path = sub.tree.session_group("a", "s");
    REQUIRE_FALSE(os::prepare_group(path));
    auto opened = os::open_group(path);
    REQUIRE(opened);
    fd = std::move(*opened);
  }
  ~spawn_group() {
    (void)os::kill_group(path);
    (void)os::wait_empty(path, 5000);
  }

  /// Runs `sh -c script` in the group with stdin from `in` (-1: none);
  /// its exit status and everything it wrote to stdout.
  std::pair<int, std::string> run(const std::string& script, int in = -1) {
    int out[2];
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    auto c = sandbox::spawn_in_cgroup(fd.get(), {"/bin/sh", "-c", script}, in,
                                      out[1], out[1]);
    ::close(out[1]);
    REQUIRE(c);
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;)
      text.append(buf, static_cast<size_t>(n));
    ::close(out[0]);
    return {sandbox::wait_child(*c), text};
  }

  test::cgroup_subtree sub;
  std::string path;
  os::unique_fd fd;
};

std::string field(const std::string& status, const std::string& name) {
  auto at = status.find(name + ":");
  REQUIRE(at != std::string::npos);
  auto begin = status.find_first_not_of(" \t", at + name.size() + 1);
  return status.substr(begin, status.find('\n', begin) - begin);
}

} // namespace

TEST_CASE("spawn: the child runs in the group with the exit status seen") {
  spawn_group g;
  auto [code, out] = g.run("cat /proc/self/cgroup; exit 7");
  CHECK(code == 7);
  CHECK(out.find("/agents/a/sessions/s") != std::string::npos);
}

TEST_CASE("spawn: stdin comes from the given fd, else from /dev/null") {
  spawn_group g;
  int in[2];
  REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
  REQUIRE(::write(in[1], "hello", 5) == 5);
  ::close(in[1]);
  CHECK(g.run("cat", in[0]).second == "hello");
  ::close(in[0]);
  CHECK(g.run("cat; echo end").second == "end\n");
}

TEST_CASE("spawn: a failed exec is an error naming the program, no child "
          "is left") {
  spawn_group g;
  auto c =
      sandbox::spawn_in_cgroup(g.fd.get(), {"/nonexistent/program"}, -1, 2, 2);
  REQUIRE_FALSE(c);
  CHECK(message_of(c.error()).find("/nonexistent/program") !=
        std::string::npos);
  // Reaped: the calling process has no child to wait for.
  CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
}

TEST_CASE("spawn: the child starts with no blocked signal and default "
          "handlers although the caller blocked, caught and ignored some") {
  spawn_group g;
  struct sigaction handler {};
  handler.sa_handler = [](int) {
  };
  struct sigaction old {
  }, old_pipe{}, ignore{};
  REQUIRE(::sigaction(SIGUSR1, &handler, &old) == 0);
  ignore.sa_handler = SIG_IGN;
  REQUIRE(::sigaction(SIGPIPE, &ignore, &old_pipe) == 0);
  sigset_t usr2, saved;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  REQUIRE(::pthread_sigmask(SIG_BLOCK, &usr2, &saved) == 0);
  // exec would keep the mask and ignored signals: the shell would show
  // them.
  auto [code, status] = g.run("cat /proc/self/status");
  CHECK(code == 0);
  CHECK(field(status, "SigBlk") == "0000000000000000");
  CHECK(field(status, "SigIgn") == "0000000000000000");
  // The caller's own mask is back as it was.
  sigset_t now;
  REQUIRE(::pthread_sigmask(SIG_SETMASK, nullptr, &now) == 0);
  CHECK(sigismember(&now, SIGUSR2) == 1);
  CHECK(sigismember(&now, SIGUSR1) == 0);
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  ::sigaction(SIGUSR1, &old, nullptr);
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
}
