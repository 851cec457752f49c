// SPDX-License-Identifier: Apache-2.0
// The readiness checks and allox-guest-bootstrap on this machine, which
// has everything a tracked session needs.
#include "tracking/readiness.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <set>

using namespace allox;

TEST_CASE("readiness: this machine is ready, and each check says why") {
  auto report = tracking::check_readiness({});
  std::set<std::string> names;
  for (const auto& c : report.checks) {
    CHECK_MESSAGE(c.ok, c.name << ": " << c.detail);
    CHECK_FALSE(c.detail.empty());
    names.insert(c.name);
  }
  CHECK(report.ready);
  CHECK(names == std::set<std::string>{"cgroup_v2", "btf", "tracepoints",
                                       "bpf_load", "btrfs", "bwrap"});
}

TEST_CASE("readiness: a missing bwrap makes the guest not ready") {
  tracking::readiness_options opts;
  opts.bwrap = "/nonexistent/bwrap";
  opts.load_probe = false;
  auto report = tracking::check_readiness(opts);
  CHECK_FALSE(report.ready);
  CHECK_FALSE(report.checks.back().ok);
  CHECK(report.checks.back().name == "bwrap");
}

TEST_CASE("bootstrap: prints a ready report and exits 0") {
  auto* pipe = ::popen(ALLOX_GUEST_BOOTSTRAP_PATH " 2>/dev/null", "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0;)
    out.append(buf.data(), n);
  int status = ::pclose(pipe);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  auto report = json::parse(out).as_object();
  CHECK(report.at("ready").as_bool());
  auto& checks = report.at("checks").as_array();
  CHECK(checks.size() == 6);
  for (const auto& c : checks) {
    CHECK(c.as_object().at("ok").as_bool());
    CHECK(c.as_object().at("name").is_string());
    CHECK(c.as_object().at("detail").is_string());
  }

  auto* failing = ::popen(ALLOX_GUEST_BOOTSTRAP_PATH
                          " --skip-probe --bwrap /nonexistent/bwrap",
                          "r");
  REQUIRE(failing != nullptr);
  out.clear();
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), failing)) > 0;)
    out.append(buf.data(), n);
  status = ::pclose(failing);
  CHECK(WEXITSTATUS(status) == 1);
  CHECK_FALSE(json::parse(out).as_object().at("ready").as_bool());
}
