// SPDX-License-Identifier: Apache-2.0
// What a session group's processes use, from cgroupfs: cpu.stat is there
// without any controller; memory.current, memory.peak and pids.current
// only where the memory and pids controllers reach the group (the guest
// VM), so without them memory is the sum of the processes' resident sets.
#include "guest/os/cgroup.hpp"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace allox::os {

namespace {

std::optional<int64_t> read_number(const std::string& path) {
  std::ifstream in{path};
  int64_t v = 0;
  if (!(in >> v))
    return std::nullopt;
  return v;
}

/// The whole text of a small control file; none when it cannot be read.
std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The group and every group below it.
void collect_groups(const std::string& group, std::vector<std::string>& out) {
  out.push_back(group);
  DIR* d = ::opendir(group.c_str());
  if (d == nullptr)
    return;
  while (auto* e = ::readdir(d))
    if (e->d_type == DT_DIR && e->d_name[0] != '.')
      collect_groups(group + "/" + e->d_name, out);
  ::closedir(d);
}

/// Resident bytes of one process (statm's second field, in pages); 0 for
/// one that is gone or a kernel thread.
int64_t resident_bytes(const std::string& pid) {
  std::ifstream in{"/proc/" + pid + "/statm"};
  int64_t size = 0;
  int64_t resident = 0;
  if (!(in >> size >> resident))
    return 0;
  return resident * ::sysconf(_SC_PAGESIZE);
}

} // namespace

group_usage read_usage(const std::string& group) {
  group_usage u;
  if (::access(group.c_str(), F_OK) != 0)
    return u;
  u.present = true;
  {
    std::ifstream in{group + "/cpu.stat"};
    std::string key;
    int64_t value = 0;
    while (in >> key >> value) {
      if (key == "usage_usec")
        u.cpu_usage_usec = value;
      else if (key == "user_usec")
        u.cpu_user_usec = value;
      else if (key == "system_usec")
        u.cpu_system_usec = value;
    }
  }
  std::vector<std::string> groups;
  collect_groups(group, groups);
  int64_t rss = 0;
  for (const auto& g : groups) {
    std::ifstream in{g + "/cgroup.procs"};
    std::string pid;
    while (in >> pid) {
      ++u.processes;
      rss += resident_bytes(pid);
    }
  }
  if (auto current = read_number(group + "/memory.current")) {
    u.memory_from_cgroup = true;
    u.memory_bytes = *current;
  } else {
    u.memory_bytes = rss;
  }
  u.memory_peak_bytes = read_number(group + "/memory.peak");
  u.pids_current = read_number(group + "/pids.current");
  u.memory_max_bytes = read_number(group + "/memory.max"); // "max": none
  u.oom_kills = oom_kills(group);
  if (auto pids = read_text(group + "/pids.events"))
    u.pids_refused = keyed_count(*pids, "max");
  return u;
}

int64_t keyed_count(std::string_view text, std::string_view key) {
  std::istringstream in{std::string{text}};
  std::string k;
  int64_t value = 0;
  while (in >> k >> value)
    if (k == key)
      return value;
  return 0;
}

int64_t oom_kills_of(std::string_view memory_events) {
  return keyed_count(memory_events, "oom_kill");
}

std::optional<int64_t> oom_kills(const std::string& group) {
  auto text = read_text(group + "/memory.events");
  if (!text)
    return std::nullopt;
  return oom_kills_of(*text);
}

group_counters read_counters(const std::string& group) {
  group_counters c;
  auto cpu = read_text(group + "/cpu.stat");
  if (!cpu)
    return c; // cpu.stat is in every group: the group is gone
  c.present = true;
  c.cpu_usage_usec = keyed_count(*cpu, "usage_usec");
  c.memory_bytes = read_number(group + "/memory.current");
  c.memory_peak_bytes = read_number(group + "/memory.peak");
  c.pids_current = read_number(group + "/pids.current");
  c.oom_kills = oom_kills(group);
  if (auto pids = read_text(group + "/pids.events"))
    c.pids_refused = keyed_count(*pids, "max");
  return c;
}

} // namespace allox::os
