// SPDX-License-Identifier: Apache-2.0
// Checkpoint commands beyond one call (list --graph, watch, restore), file
// transfers and metrics.
#include "cli/commands.hpp"
#include "cli/tarball.hpp"

#include <CLI/CLI.hpp>
#include <boost/beast/core/detail/base64.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

namespace allox::ctl {

namespace {

namespace b64 = boost::beast::detail::base64;

// -- checkpoint list, watch, restore ------------------------------------------

struct list_args {
  bool graph = false;
  int64_t limit = 0;
  std::string cursor;
};

int list_command(app_state& st, const list_args& a) {
  auto target = st.session_call();
  if (!target)
    return report(target.error());
  auto& [params, daemon] = *target;
  if (a.limit > 0)
    params["limit"] = a.limit;
  if (!a.cursor.empty())
    params["cursor"] = a.cursor;
  auto r = daemon->rpc("checkpoint.list", params);
  if (!r)
    return report(r.error());
  print_result(*st.out, st.st, *r, [&] {
    (a.graph ? view_checkpoint_graph : view_checkpoint_list)(*r, *st.out,
                                                             st.st);
  });
  return exit_ok;
}

/// One change seen by watch, printed in the chosen format as it happens:
/// JSON lines, YAML documents, or a line of text.
void emit(app_state& st, const std::string& event, const json::object& what) {
  json::object o{{"event", event}};
  for (const auto& kv : what)
    o[kv.key()] = kv.value();
  auto& out = *st.out;
  switch (st.st.format) {
  case output_format::json:
    out << json::serialize(o) << "\n";
    break;
  case output_format::yaml:
    out << "---\n" << to_yaml(o);
    break;
  case output_format::table: {
    std::string line = st.st.bold(event);
    for (const auto& kv : what)
      if (!kv.value().is_object())
        line += "  " + std::string{kv.key()} + "=" + cell(kv.value());
    out << line << "\n";
  }
  }
  out.flush();
}

/// Lists the session's checkpoints every interval and prints what changed:
/// created, deleted, head moved. Foreground; Ctrl-C ends it (exit 0).
int watch_command(app_state& st, double interval) {
  auto target = st.session_call();
  if (!target)
    return report(target.error());
  auto& [params, daemon] = *target;
  if (interval <= 0)
    return report(usage_error("--interval must be positive"));
  catch_interrupts();
  std::map<std::string, json::object> known;
  std::string head;
  bool first = true;
  while (interrupted == 0) {
    auto r = daemon->rpc("checkpoint.list", params);
    if (!r)
      return report(r.error());
    const auto& o = r->as_object();
    std::map<std::string, json::object> now;
    for (const auto& rec : o.at("checkpoints").as_array()) {
      const auto& c = rec.as_object();
      now[cell(c.at("checkpoint_id"))] = c;
    }
    for (const auto& [id, rec] : now)
      if (known.count(id) == 0)
        emit(st, first ? "exists" : "created",
             json::object{{"checkpoint_id", id},
                          {"parent_id", rec.at("parent_id")},
                          {"message", rec.at("message")},
                          {"pinned", rec.at("pinned")}});
    for (const auto& [id, rec] : known)
      if (now.count(id) == 0)
        emit(st, "deleted", json::object{{"checkpoint_id", id}});
    auto new_head = cell(o.at("head"));
    if (new_head != head && !(first && new_head == "-"))
      emit(st, "head", json::object{{"checkpoint_id", o.at("head")}});
    head = new_head;
    known = std::move(now);
    first = false;
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::duration<double>(interval);
    while (interrupted == 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  return exit_ok;
}

struct restore_args {
  std::string checkpoint;
  std::string new_session;
};

/// The id restore gives the new session when none is named: the source's
/// and the checkpoint's, then -2, -3, ... (`attempt`), within the daemon's
/// id rules (`[A-Za-z0-9][A-Za-z0-9_.-]{0,63}`).
std::string restored_id(const std::string& session,
                        const std::string& checkpoint, int attempt) {
  std::string tail = "-" + checkpoint;
  for (auto& ch : tail)
    if (!std::isalnum(static_cast<unsigned char>(ch)) &&
        std::strchr("_.-", ch) == nullptr)
      ch = '-';
  std::string suffix = attempt > 1 ? "-" + std::to_string(attempt) : "";
  std::string id = session + tail;
  constexpr size_t max_id = 64;
  if (id.size() + suffix.size() > max_id)
    id.resize(max_id - suffix.size());
  return id + suffix;
}

/// Forks the session at a checkpoint into a new session and makes it the
/// current context. Without --new-session the first free id of
/// restored_id() is taken.
int restore_command(app_state& st, const restore_args& a) {
  auto target = st.session_call();
  if (!target)
    return report(target.error());
  auto& [params, daemon] = *target;
  params["checkpoint_id"] = a.checkpoint;
  bool pick = a.new_session.empty();
  auto session = cell(params.at("session_id"));
  std::string made;
  json::value r;
  {
    progress p{st.st};
    p.update("forking " + session + " at " + a.checkpoint + " ...");
    for (int attempt = 1;; ++attempt) {
      made = pick ? restored_id(session, a.checkpoint, attempt) : a.new_session;
      params["new_session_id"] = made;
      auto forked = daemon->rpc("session.fork", params);
      if (!forked && pick && forked.error().code == "already_exists" &&
          attempt < 100)
        continue;
      if (!forked)
        return report(forked.error());
      r = std::move(*forked);
      break;
    }
  }
  auto agent = cell(params.at("agent_id"));
  auto& profile = st.file.profiles[st.cfg.profile.value];
  profile["agent"] = agent;
  profile["session"] = made;
  if (auto saved = save_config(st.file); !saved)
    return report(saved.error());
  print_result(*st.out, st.st, r, [&] {
    view_generic(r, *st.out, st.st);
    if (pick)
      *st.out << "created session: " << agent << "/" << made << "\n";
    *st.out << "context: " << agent << "/" << made << "\n";
  });
  return exit_ok;
}

// -- dump and metrics
// ---------------------------------------------------------------------

/// Sorts every `children` array by kind and ids: the daemon lists
/// children in the order their answers arrived, which varies.
void sort_tree(json::value& node) {
  if (!node.is_object())
    return;
  auto* kids = node.get_object().if_contains("children");
  if (kids == nullptr || !kids->is_array())
    return;
  auto& a = kids->get_array();
  for (auto& k : a)
    sort_tree(k);
  auto key = [](const json::value& v) {
    if (!v.is_object())
      return std::string{};
    std::string k;
    for (const char* f : {"kind", "agent_id", "session_id"})
      if (auto* x = v.get_object().if_contains(f); x && x->is_string())
        k += std::string{x->get_string()} + '\x01';
    return k;
  };
  std::stable_sort(a.begin(), a.end(),
                   [&](const json::value& l, const json::value& r) {
                     return key(l) < key(r);
                   });
}

int dump_command(app_state& st) {
  auto daemon = st.daemon();
  if (!daemon)
    return report(daemon.error());
  auto r = (*daemon)->rpc("system.dump");
  if (!r)
    return report(r.error());
  if (auto* tree =
          r->is_object() ? r->get_object().if_contains("tree") : nullptr)
    sort_tree(*tree);
  print_result(*st.out, st.st, *r, [&] { view_dump(*r, *st.out, st.st); });
  return exit_ok;
}

int metrics_command(app_state& st) {
  auto daemon = st.daemon();
  if (!daemon)
    return report(daemon.error());
  auto r = (*daemon)->get("/metrics");
  if (!r)
    return report(r.error());
  if (r->status == 404)
    return report(
        {exit_unsupported, "metrics is not supported by this daemon", {}});
  if (r->status != 200)
    return report(daemon_failure("metrics", *r));
  if (st.st.format == output_format::table)
    *st.out << r->body;
  else
    print_result(*st.out, st.st, json::object{{"metrics", r->body}}, [] {});
  return exit_ok;
}

} // namespace

void add_run_commands(CLI::App& app, app_state& st, std::function<int()>* run);

void add_flow_commands(CLI::App& app, app_state& st,
                       std::function<int()>* run) {
  add_run_commands(app, st, run);

  static list_args la;
  auto* l = subcommand(app, {"checkpoint", "list"},
                       "the session's checkpoints (checkpoint.list)");
  l->add_flag("--graph", la.graph, "draw the DAG");
  l->add_option("--limit", la.limit, "page size");
  l->add_option("--cursor", la.cursor, "continue after this checkpoint");
  l->callback([&st, run] {
    *run = [&st] {
      return list_command(st, la);
    };
  });

  static double interval = 2;
  auto* w = subcommand(app, {"checkpoint", "watch"},
                       "print checkpoint changes as they happen; Ctrl-C stops");
  w->add_option("--interval", interval, "seconds between looks (default 2)");
  w->callback([&st, run] {
    *run = [&st] {
      return watch_command(st, interval);
    };
  });

  static restore_args ra;
  auto* r = subcommand(app, {"checkpoint", "restore"},
                       "fork the session at a checkpoint into a new session "
                       "and make it current (session.fork)");
  r->add_option("CHECKPOINT", ra.checkpoint, "the checkpoint")->required();
  r->add_option("--new-session", ra.new_session,
                "the new session's id (default: SESSION-CHECKPOINT, then "
                "-2, -3, ... until one is free)");
  r->callback([&st, run] {
    *run = [&st] {
      return restore_command(st, ra);
    };
  });

  add_file_commands(app, st, run);

  auto* dump = app.add_subcommand(
      "dump", "the daemon's actor tree, children sorted (system.dump)");
  dump->callback([&st, run] {
    *run = [&st] {
      return dump_command(st);
    };
  });

  auto* m = app.add_subcommand("metrics", "the daemon's metrics (/metrics)");
  m->callback([&st, run] {
    *run = [&st] {
      return metrics_command(st);
    };
  });
}

} // namespace allox::ctl
