// SPDX-License-Identifier: Apache-2.0
// What a session group's processes use, from cgroupfs: cpu.stat is there
// without any controller; memory.current, memory.peak and pids.current
// only where the memory and pids controllers reach the group (the guest
// VM), so without them memory is the sum of the processes' resident sets.
#include "guest/os/cgroup.hpp"

#include "guest/os/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace allox::os {

namespace {

/// The whole text of a small control file (one read: cgroupfs files are
/// made whole at open); none when it cannot be read. Raw calls, as
/// describe and every scrape read six of these per session.
std::optional<std::string> read_text(const std::string& path) {
  unique_fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (!fd)
    return std::nullopt;
  char buf[4096];
  auto n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0)
    return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

/// A file holding one number; none when it cannot be read or says "max".
std::optional<int64_t> read_number(const std::string& path) {
  auto text = read_text(path);
  if (!text)
    return std::nullopt;
  int64_t v = 0;
  auto [end, ec] =
      std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc{} || end == text->data())
    return std::nullopt;
  return v;
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

} // namespace

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

group_usage read_usage(const std::string& group) {
  group_usage u;
  u.counters = read_counters(group);
  if (!u.counters.present)
    return u;
  if (auto cpu = read_text(group + "/cpu.stat")) {
    u.cpu_user_usec = keyed_count(*cpu, "user_usec");
    u.cpu_system_usec = keyed_count(*cpu, "system_usec");
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
  u.memory_from_cgroup = u.counters.memory_bytes.has_value();
  u.memory_bytes = u.counters.memory_bytes.value_or(rss);
  u.memory_max_bytes = read_number(group + "/memory.max"); // "max": none
  return u;
}

int64_t keyed_count(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    auto eol = text.find('\n');
    auto line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{}
                                         : text.substr(eol + 1);
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
        line[key.size()] == ' ') {
      int64_t v = 0;
      auto digits = line.substr(key.size() + 1);
      std::from_chars(digits.data(), digits.data() + digits.size(), v);
      return v;
    }
  }
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

namespace allox::os {

namespace {

void add(std::optional<int64_t>& total, const std::optional<int64_t>& v) {
  if (v)
    total = total.value_or(0) + *v;
}

} // namespace

void add_retired(group_counters& total, const group_counters& gone) {
  if (!gone.present)
    return;
  total.present = true;
  total.cpu_usage_usec += gone.cpu_usage_usec;
  add(total.oom_kills, gone.oom_kills);
  add(total.pids_refused, gone.pids_refused);
  if (gone.memory_peak_bytes)
    total.memory_peak_bytes =
        std::max(total.memory_peak_bytes.value_or(0), *gone.memory_peak_bytes);
}

group_counters with_retired(group_counters live,
                            const group_counters& retired) {
  if (!live.present) {
    // Nothing runs: no memory in use and no tasks, where those were ever
    // counted.
    if (retired.oom_kills)
      live.memory_bytes = 0;
    if (retired.pids_refused)
      live.pids_current = 0;
  }
  live.present = live.present || retired.present;
  live.cpu_usage_usec += retired.cpu_usage_usec;
  if (live.oom_kills || retired.oom_kills)
    add(live.oom_kills, retired.oom_kills.value_or(0));
  if (live.pids_refused || retired.pids_refused)
    add(live.pids_refused, retired.pids_refused.value_or(0));
  if (retired.memory_peak_bytes)
    live.memory_peak_bytes = std::max(live.memory_peak_bytes.value_or(0),
                                      *retired.memory_peak_bytes);
  return live;
}

} // namespace allox::os
