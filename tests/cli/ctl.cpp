// SPDX-License-Identifier: Apache-2.0
#include "tests/cli/ctl.hpp"
#include "tests/fixtures/golden.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>
#include <thread>

#ifndef ALLOXCTL_PATH
#error "ALLOXCTL_PATH must name the alloxctl binary"
#endif
#ifndef ALLOX_GOLDEN_DIR
#error "ALLOX_GOLDEN_DIR must name tests/cli/golden"
#endif

namespace allox::test {

ctl_process::ctl_process(std::string url) : dir_("allox-ctl-") {
  config_ = dir_ / "config.toml";
  if (!url.empty())
    env["ALLOX_URL"] = url;
}

void ctl_process::start(const std::vector<std::string>& args) {
  REQUIRE(pid_ < 0);
  int out[2], err[2];
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(err, O_CLOEXEC) == 0);
  // A fixed, small environment: nothing of the caller's configuration
  // leaks into the output under test.
  std::vector<std::string> envs{"PATH=/usr/bin:/bin", "HOME=" + dir_.path(),
                                "ALLOX_CONFIG=" + config_};
  for (const auto& [k, v] : env)
    envs.push_back(k + "=" + v);
  pid_ = ::fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    std::vector<char*> argv{const_cast<char*>(ALLOXCTL_PATH)};
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& e : envs)
      envp.push_back(e.data());
    envp.push_back(nullptr);
    ::execve(ALLOXCTL_PATH, argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  out_.clear();
  err_.clear();
}

namespace {

/// Reads what is available on the open fds for up to `wait`; closes (and
/// sets to -1) those at EOF.
void pump(int& out_fd, int& err_fd, std::string& out, std::string& err,
          std::chrono::milliseconds wait) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  if (::poll(fds, 2, static_cast<int>(wait.count())) <= 0)
    return;
  char buf[65536];
  int* fdp[2] = {&out_fd, &err_fd};
  std::string* dst[2] = {&out, &err};
  for (int i = 0; i < 2; ++i) {
    if (*fdp[i] < 0 || fds[i].revents == 0)
      continue;
    auto n = ::read(*fdp[i], buf, sizeof buf);
    if (n > 0) {
      dst[i]->append(buf, static_cast<size_t>(n));
    } else {
      ::close(*fdp[i]);
      *fdp[i] = -1;
    }
  }
}

} // namespace

std::string ctl_process::read_until(const std::string& text,
                                    std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out_.find(text) == std::string::npos && out_fd_ >= 0 &&
         std::chrono::steady_clock::now() < deadline)
    pump(out_fd_, err_fd_, out_, err_, std::chrono::milliseconds{20});
  return out_;
}

void ctl_process::signal(int sig) {
  REQUIRE(pid_ > 0);
  ::kill(pid_, sig);
}

ctl_result ctl_process::finish(std::chrono::milliseconds timeout) {
  REQUIRE(pid_ > 0);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while ((out_fd_ >= 0 || err_fd_ >= 0) &&
         std::chrono::steady_clock::now() < deadline)
    pump(out_fd_, err_fd_, out_, err_, std::chrono::milliseconds{50});
  ctl_result r;
  for (;;) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      FAIL_CHECK("alloxctl did not finish in time");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  for (int* fd : {&out_fd_, &err_fd_})
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
  pid_ = -1;
  r.out = out_;
  r.err = err_;
  return r;
}

ctl_result ctl_process::run(const std::vector<std::string>& args,
                            std::chrono::milliseconds timeout) {
  start(args);
  return finish(timeout);
}

std::string normalise(const std::string& text) {
  static const std::pair<std::regex, const char*> rules[] = {
      {std::regex{R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)"}, "YYYY-MM-DD hh:mm:ss"},
      {std::regex{R"(\b\d{19}\b)"}, "<ns>"},
      // Unquoted too: YAML quotes a hex id only when it starts with a digit.
      {std::regex{R"("[0-9a-f]{32}")"}, "<hex>"},
      {std::regex{R"(\b[0-9a-f]{32}\b)"}, "<hex>"},
      // The same for a boot id, which YAML quotes when it starts with a
      // digit (so a golden file does not depend on the boot).
      {std::regex{
           R"("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")"},
       "<uuid>"},
      {std::regex{
           R"(\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)"},
       "<uuid>"},
      {std::regex{R"(/sys/fs/cgroup(/unified)?/)"}, "<cgroup v2>/"},
      {std::regex{R"x(((lane)"?:\s*)(true|false))x"}, "$1B"},
      {std::regex{R"(allox-(test|ctl)-[A-Za-z0-9]{6})"}, "allox-$1-XXXXXX"},
      {std::regex{R"(127\.0\.0\.1:\d+)"}, "127.0.0.1:PORT"},
      {std::regex{R"(/dev/loop\d+)"}, "/dev/loopN"},
      {std::regex{R"x(((root_pid|pid|uptime_ms)"?:\s*)\d+)x"}, "$1N"},
  };
  std::string out = text;
  for (const auto& [re, with] : rules)
    out = std::regex_replace(out, re, with);
  return out;
}

void check_golden(const std::string& name, const std::string& text) {
  check_golden_file(ALLOX_GOLDEN_DIR, name, text);
}

} // namespace allox::test
