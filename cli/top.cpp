// SPDX-License-Identifier: Apache-2.0
// alloxctl session top: every session's usage (session.usage: CPU from its
// cgroup's cpu.stat, memory, pids, runs and processes, disk), as a table
// redrawn every interval on a terminal; once with --once, on a pipe, or
// for json and yaml. CPU is the share of one core between two samples, so
// a single sample is taken twice, --interval apart.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <map>
#include <thread>

namespace allox::ctl {

namespace {

struct top_args {
  double interval = 2;
  bool once = false;
  std::string agent;
};

/// Every AGENT/SESSION to sample: one agent's, or every agent's.
result<std::vector<std::pair<std::string, std::string>>>
sessions_of(client& daemon, const std::string& agent) {
  std::vector<std::string> agents;
  if (!agent.empty()) {
    agents.push_back(agent);
  } else {
    auto all = daemon.rpc("agent.list");
    if (!all)
      return all.error();
    for (const auto& a : all->at("agent_ids").as_array())
      agents.emplace_back(a.as_string());
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& a : agents) {
    auto list = daemon.rpc("session.list", {{"agent_id", a}});
    if (!list)
      return list.error();
    for (const auto& s : list->at("session_ids").as_array())
      out.emplace_back(a, std::string{s.as_string()});
  }
  return out;
}

/// One sample of every session, by AGENT/SESSION; a session deleted
/// between the list and its sample is left out.
result<std::map<std::string, json::object>> sample(client& daemon,
                                                   const std::string& agent) {
  auto ids = sessions_of(daemon, agent);
  if (!ids)
    return ids.error();
  std::map<std::string, json::object> out;
  for (const auto& [a, s] : *ids) {
    auto u = daemon.rpc("session.usage", {{"agent_id", a}, {"session_id", s}});
    if (!u) {
      if (u.error().code == "not_found")
        continue;
      return u.error();
    }
    out[a + "/" + s] = u->as_object();
  }
  return out;
}

int64_t int_at(const json::object& o, std::initializer_list<const char*> path) {
  const json::value* v = nullptr;
  const json::object* at = &o;
  for (auto key : path) {
    v = at->if_contains(key);
    if (v == nullptr)
      return -1;
    if (v->is_object())
      at = &v->as_object();
  }
  return v != nullptr && v->is_int64() ? v->as_int64() : -1;
}

std::string bytes_text(int64_t b) {
  if (b < 0)
    return "-";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

/// `o[key]`, or null for a daemon that does not report it.
json::value value_or_null(const json::value& o, const char* key) {
  if (const auto* v = o.as_object().if_contains(key))
    return *v;
  return nullptr;
}

/// The rows of `now`, with CPU as a share of one core since `before`.
json::array rows_of(const std::map<std::string, json::object>& before,
                    const std::map<std::string, json::object>& now) {
  json::array rows;
  for (const auto& [key, u] : now) {
    json::value cpu = nullptr;
    if (auto it = before.find(key); it != before.end()) {
      auto used = int_at(u, {"cpu", "usage_usec"}) -
                  int_at(it->second, {"cpu", "usage_usec"});
      auto ns = int_at(u, {"sampled_ns"}) - int_at(it->second, {"sampled_ns"});
      if (ns > 0 && used >= 0)
        cpu =
            100.0 * static_cast<double>(used) * 1000 / static_cast<double>(ns);
    }
    rows.push_back(
        json::object{{"session", key},
                     {"cpu_pct", cpu},
                     {"memory_bytes", u.at("memory").at("bytes")},
                     {"memory_peak_bytes", u.at("memory").at("peak_bytes")},
                     {"pids", u.at("pids_current")},
                     {"oom_kills", value_or_null(u.at("memory"), "oom_kills")},
                     {"pids_refused", value_or_null(u, "pids_refused")},
                     {"runs", u.at("runs")},
                     {"processes", u.at("processes")},
                     {"disk_bytes", u.at("disk").at("used_bytes")},
                     {"paused", u.at("paused")}});
  }
  return rows;
}

void print_rows(app_state& st, const json::array& rows) {
  std::vector<const json::object*> ptrs;
  for (const auto& r : rows)
    ptrs.push_back(&r.as_object());
  auto pct = [](const json::object& r) {
    const auto& v = r.at("cpu_pct");
    if (!v.is_number())
      return std::string{"-"};
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.1f", v.to_number<double>());
    return std::string{buf};
  };
  auto bytes = [](const char* key) {
    return [key](const json::object& r) {
      const auto& v = r.at(key);
      return bytes_text(v.is_int64() ? v.as_int64() : -1);
    };
  };
  print_table(*st.out, st.st,
              {col("SESSION", "session"),
               {"CPU%", pct},
               {"MEM", bytes("memory_bytes")},
               {"PEAK", bytes("memory_peak_bytes")},
               col("PIDS", "pids"),
               col("OOM", "oom_kills"),
               col("REFUSED", "pids_refused"),
               col("RUNS", "runs"),
               col("PROCS", "processes"),
               {"DISK", bytes("disk_bytes")},
               col("PAUSED", "paused")},
              ptrs);
}

int top_command(app_state& st, const top_args& args) {
  if (!(args.interval > 0))
    return report(usage_error("--interval must be positive"));
  auto d = st.daemon();
  if (!d)
    return report(d.error());
  bool live =
      !args.once && st.st.format == output_format::table && ::isatty(1) == 1;
  catch_interrupts();
  auto wait = [&args] {
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::duration<double>(args.interval);
    while (interrupted == 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
  };
  auto before = sample(**d, args.agent);
  if (!before)
    return report(before.error());
  while (interrupted == 0) {
    wait();
    if (interrupted != 0)
      break;
    auto now = sample(**d, args.agent);
    if (!now)
      return report(now.error());
    auto rows = rows_of(*before, *now);
    if (!live) {
      print_result(*st.out, st.st, rows, [&] { print_rows(st, rows); });
      return exit_ok;
    }
    // Home, clear, the table: one frame per interval.
    *st.out << "\x1b[H\x1b[2J" << st.st.bold("alloxctl session top") << "  "
            << rows.size() << " sessions, every " << args.interval
            << " s (Ctrl-C ends)\n\n";
    print_rows(st, rows);
    st.out->flush();
    before = std::move(now);
  }
  return exit_ok;
}

} // namespace

void add_top_command(CLI::App& app, app_state& st, std::function<int()>* run) {
  auto* session = app.get_subcommand("session");
  auto args = std::make_shared<top_args>();
  auto* top = session->add_subcommand(
      "top",
      "every session's CPU, memory, pids, runs and disk (session.usage), "
      "refreshed on a terminal");
  top->add_option("--interval", args->interval,
                  "seconds between samples (CPU is measured over it)")
      ->capture_default_str();
  top->add_flag("--once", args->once, "print one table and exit");
  top->add_option("--agent", args->agent, "only this agent's sessions");
  top->callback([&st, run, args] {
    *run = [&st, args] {
      return top_command(st, *args);
    };
  });
}

} // namespace allox::ctl
