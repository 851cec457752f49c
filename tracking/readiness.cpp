// SPDX-License-Identifier: Apache-2.0
#include "tracking/readiness.hpp"

#include "bpf/loader.hpp"
#include "guest/os/cgroup.hpp"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace allox::tracking {

namespace {

readiness_check check_cgroup(const std::string& root) {
  auto tree = os::cgroup_tree::open(root);
  if (!tree)
    return {"cgroup_v2", false, message_of(tree.error())};
  return {"cgroup_v2", true,
          "mounted at " + tree->mount() + ", subtree " + tree->root() +
              " has cgroup.kill"};
}

readiness_check check_btf() {
  constexpr const char* path = "/sys/kernel/btf/vmlinux";
  if (::access(path, R_OK) != 0)
    return {"btf", false,
            std::string{path} + ": " + std::strerror(errno) +
                " (kernel built without CONFIG_DEBUG_INFO_BTF?)"};
  auto* btf = btf__load_vmlinux_btf();
  if (btf == nullptr)
    return {"btf", false,
            std::string{"parse "} + path + ": " + std::strerror(errno)};
  auto types = btf__type_cnt(btf);
  btf__free(btf);
  return {"btf", true,
          std::string{path} + ", " + std::to_string(types) + " types"};
}

readiness_check check_tracepoints() {
  auto* btf = btf__load_vmlinux_btf();
  if (btf == nullptr)
    return {"tracepoints", false, "no kernel BTF to resolve them in"};
  std::string missing;
  std::string found;
  for (auto name : bpf::tracepoint_types) {
    std::string n{name};
    auto& list = btf__find_by_name_kind(btf, n.c_str(), BTF_KIND_TYPEDEF) < 0
                     ? missing
                     : found;
    list += (list.empty() ? "" : ", ") + n;
  }
  btf__free(btf);
  if (!missing.empty())
    return {"tracepoints", false, "missing in the kernel BTF: " + missing};
  return {"tracepoints", true, found};
}

readiness_check check_probe() {
  bpf::probe_options opts;
  opts.ring_bytes = static_cast<uint32_t>(::sysconf(_SC_PAGESIZE));
  opts.max_tasks = 16;
  opts.max_runs = 4;
  auto probe = bpf::process_probe::open(std::move(opts));
  if (!probe)
    return {"bpf_load", false, message_of(probe.error())};
  std::string detail =
      "loaded and attached fork, exec and exit programs (exit uses ";
  detail += (*probe)->exit_has_group_dead() ? "the group_dead argument)"
                                            : "signal->live)";
  probe->reset();
  return {"bpf_load", true, detail};
}

readiness_check check_btrfs() {
  std::ifstream in{"/proc/filesystems"};
  if (!in)
    return {"btrfs", false, "cannot read /proc/filesystems"};
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields{line};
    std::string first;
    std::string second;
    fields >> first >> second;
    if (first == "btrfs" || second == "btrfs")
      return {"btrfs", true, "listed in /proc/filesystems"};
  }
  return {"btrfs", false, "not in /proc/filesystems (modprobe btrfs?)"};
}

readiness_check check_bwrap(const std::string& bwrap) {
  auto executable = [](const std::string& p) {
    return ::access(p.c_str(), X_OK) == 0;
  };
  if (bwrap.find('/') != std::string::npos) {
    if (executable(bwrap))
      return {"bwrap", true, bwrap};
    return {"bwrap", false, bwrap + ": " + std::strerror(errno)};
  }
  const char* path = std::getenv("PATH");
  std::istringstream dirs{path != nullptr ? path : "/usr/bin:/bin"};
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty())
      continue;
    auto candidate = dir + "/" + bwrap;
    if (executable(candidate))
      return {"bwrap", true, candidate};
  }
  return {"bwrap", false, bwrap + " not found in PATH (install bubblewrap)"};
}

} // namespace

json::value readiness_report::to_json() const {
  json::array list;
  for (const auto& c : checks)
    list.push_back(
        json::object{{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
  return json::object{{"ready", ready}, {"checks", std::move(list)}};
}

readiness_report check_readiness(const readiness_options& opts) {
  readiness_report report;
  report.checks.push_back(check_cgroup(opts.cgroup_root));
  report.checks.push_back(check_btf());
  report.checks.push_back(check_tracepoints());
  if (opts.load_probe)
    report.checks.push_back(check_probe());
  report.checks.push_back(check_btrfs());
  report.checks.push_back(check_bwrap(opts.bwrap));
  report.ready = true;
  for (const auto& c : report.checks)
    report.ready = report.ready && c.ok;
  return report;
}

} // namespace allox::tracking
