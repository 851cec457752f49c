// SPDX-License-Identifier: Apache-2.0
// Commands that follow a run: run (start, stream, exit with its code),
// logs (-f streams), ps, wait.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>

namespace allox::ctl {

namespace {

/// Writes all of `data` to `fd` at once, so output appears as it comes.
void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    auto n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return; // a closed pipe: nothing more to say
    done += static_cast<size_t>(n);
  }
}

std::string stream_target(const json::object& ids, const std::string& run) {
  // Ids follow ^[A-Za-z0-9][A-Za-z0-9_.-]*$ and need no escaping.
  return "/v1/stream?agent_id=" + std::string{ids.at("agent_id").as_string()} +
         "&session_id=" + std::string{ids.at("session_id").as_string()} +
         "&run_id=" + run;
}

/// Follows a run's output on the live stream until the run ended: stdout
/// to fd 1, stderr to fd 2. With `stop_on_interrupt`, the first Ctrl-C
/// stops the run (and its remaining output is still shown), a second one
/// gives up. Reconnects with Last-Event-ID if the stream breaks.
result<bool> follow(client& daemon, const json::object& ids,
                    const std::string& run, bool stop_on_interrupt) {
  std::string last_id;
  bool ended = false;
  bool stopped = false;
  failure stream_error;
  auto on_event = [&](const sse_event& ev) {
    if (ev.event == "stdout" || ev.event == "stderr") {
      boost::system::error_code ec;
      auto payload = json::parse(ev.data, ec);
      if (!ec && payload.is_object())
        if (auto* d = payload.get_object().if_contains("data");
            d && d->is_string())
          write_all(ev.event == "stdout" ? 1 : 2, std::string{d->get_string()});
      if (!ev.id.empty())
        last_id = ev.id;
    } else if (ev.event == "end") {
      ended = true;
      return false;
    } else if (ev.event == "error") {
      http_reply body{400, ev.data, {}};
      stream_error = daemon_failure("the live stream", body);
      return false;
    }
    return true;
  };
  for (int breaks = 0; !ended && breaks < 5;) {
    std::map<std::string, std::string> headers;
    if (!last_id.empty())
      headers["Last-Event-ID"] = last_id;
    auto r =
        daemon.stream(stream_target(ids, run), headers, on_event, &interrupted);
    if (!r)
      return r.error();
    if (!stream_error.message.empty())
      return stream_error;
    if (ended)
      break;
    if (!*r) { // Ctrl-C
      if (!stop_on_interrupt || stopped)
        return failure{exit_interrupted, "interrupted", {}};
      interrupted = 0;
      stopped = true;
      json::object p = ids;
      p["run_id"] = run;
      if (auto s = daemon.rpc("process.stop", p); !s)
        return s.error();
      continue; // read what the run wrote before it died, and the end
    }
    ++breaks; // closed without an end: the daemon restarted?
  }
  if (!ended)
    return failure{exit_unreachable, "lost the live stream of run " + run, {}};
  return stopped;
}

/// The exit code for a finished run's row (docs/cli.md).
int exit_for(const json::object& row, bool stopped_by_us) {
  auto state = cell(row.at("state"));
  auto* code = row.if_contains("root_exit_code");
  auto id = cell(row.at("run_id"));
  if (state == "completed" && code && code->is_number())
    return static_cast<int>(code->to_number<int64_t>() & 0xff);
  auto reason = row.if_contains("stop_reason");
  std::string why = reason && reason->is_string() ? cell(*reason) : state;
  std::cerr << "alloxctl: run " << id << " " << state
            << (why != state ? " (" + why + ")" : "") << "\n";
  if (stopped_by_us)
    return exit_interrupted;
  if (why == "timeout")
    return exit_run_timeout;
  return exit_run_no_code;
}

struct run_args {
  std::vector<std::string> command;
  std::vector<std::string> env;
  double timeout = 0;
  bool detach = false;
};

/// `run list` is more likely a mistyped `checkpoint list` than a program
/// called list: a first word that names an alloxctl subcommand must come
/// after `--`, which ends alloxctl's own arguments.
result<bool> check_command(const CLI::App& app, const app_state& st,
                           const run_args& a) {
  const auto& cmd = a.command;
  auto names = subcommand_names(app);
  if (cmd.empty() || !std::binary_search(names.begin(), names.end(), cmd[0]))
    return true;
  const auto& args = st.argv;
  bool after_dashes =
      args.size() > cmd.size() && args[args.size() - cmd.size() - 1] == "--" &&
      std::equal(cmd.begin(), cmd.end(), args.end() - cmd.size());
  if (after_dashes)
    return true;
  return usage_error("run: '" + cmd[0] +
                     "' is an alloxctl subcommand; to run a program of that "
                     "name, put -- before it: alloxctl run -- " +
                     cmd[0] + " ...");
}

int run_command(app_state& st, const run_args& a) {
  auto target = st.session_call();
  if (!target)
    return report(target.error());
  auto& [ids, daemon] = *target;
  json::object params = ids;
  json::array argv;
  for (const auto& c : a.command)
    argv.emplace_back(c);
  params["argv"] = std::move(argv);
  if (!a.env.empty()) {
    json::object env;
    for (const auto& kv : a.env) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        return report(usage_error("--env takes NAME=VALUE, not '" + kv + "'"));
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    params["env"] = std::move(env);
  }
  if (a.timeout > 0)
    params["timeout"] = a.timeout;
  catch_interrupts();
  auto row = daemon->rpc("process.start", params);
  if (!row)
    return report(row.error());
  auto run = cell(row->at("run_id"));
  if (a.detach) {
    print_result(*st.out, st.st, *row,
                 [&] { view_generic(*row, *st.out, st.st); });
    return exit_ok;
  }
  if (st.st.progress)
    std::cerr << st.st.dim("run " + run + " started") << "\n";
  auto stopped = follow(*daemon, ids, run, true);
  if (!stopped)
    return report(stopped.error());
  json::object get = ids;
  get["run_id"] = run;
  auto last = daemon->rpc("process.get", get);
  if (!last)
    return report(last.error());
  return exit_for(last->as_object(), *stopped);
}

struct logs_args {
  std::string run;
  std::string stream = "stdout";
  bool follow = false;
};

int logs_command(app_state& st, const logs_args& a) {
  auto target = st.session_call();
  if (!target)
    return report(target.error());
  auto& [ids, daemon] = *target;
  if (a.follow) {
    catch_interrupts();
    auto r = follow(*daemon, ids, a.run, false);
    return r ? exit_ok : report(r.error());
  }
  // The whole log, page by page.
  json::object params = ids;
  params["run_id"] = a.run;
  params["stream"] = a.stream;
  params["limit"] = 1 << 20;
  std::string data;
  json::value last;
  for (int64_t offset = 0;;) {
    params["offset"] = offset;
    auto page = daemon->rpc("process.output", params);
    if (!page)
      return report(page.error());
    const auto& o = page->as_object();
    data += std::string{o.at("data").as_string()};
    auto next = o.at("next_offset").to_number<int64_t>();
    bool eof = o.at("eof") == true;
    last = std::move(*page);
    if (next == offset || eof)
      break;
    offset = next;
  }
  if (st.st.format == output_format::table) {
    write_all(1, data);
    return exit_ok;
  }
  const auto& o = last.as_object();
  json::object out{{"run_id", a.run},    {"stream", a.stream},
                   {"data", data},       {"size", o.at("size")},
                   {"eof", o.at("eof")}, {"state", o.at("state")}};
  print_result(*st.out, st.st, out, [] {});
  return exit_ok;
}

int ps_command(app_state& st, const std::string& run) {
  auto target = st.session_call();
  if (!target)
    return report(target.error());
  auto& [params, daemon] = *target;
  if (!run.empty())
    params["run_id"] = run;
  auto r =
      daemon->rpc(run.empty() ? "process.list" : "process.get", params);
  if (!r)
    return report(r.error());
  print_result(*st.out, st.st, *r, [&] { view_runs(*r, *st.out, st.st); });
  return exit_ok;
}

int wait_command(app_state& st, const std::string& run, int64_t timeout_ms) {
  auto target = st.session_call();
  if (!target)
    return report(target.error());
  auto& [params, daemon] = *target;
  params["run_id"] = run;
  if (timeout_ms >= 0)
    params["timeout_ms"] = timeout_ms;
  json::value row;
  {
    progress p{st.st};
    p.update("waiting for run " + run + " ...");
    auto r = daemon->rpc("process.wait", params);
    if (!r)
      return report(r.error());
    row = std::move(*r);
  }
  print_result(*st.out, st.st, row, [&] { view_runs(row, *st.out, st.st); });
  return exit_ok;
}

} // namespace

void add_run_commands(CLI::App& app, app_state& st, std::function<int()>* run) {
  static run_args ra;
  auto* r = app.add_subcommand(
      "run", "run a command in the session's sandbox, streaming its output; "
             "exits with its exit code (process.start)");
  // One value per --env, so that `--` still ends the options.
  r->add_option("--env", ra.env, "NAME=VALUE for the run (repeatable)")
      ->allow_extra_args(false);
  r->add_option("--timeout", ra.timeout, "seconds before the daemon stops it");
  r->add_flag("-d,--detach", ra.detach, "start it and print its row");
  r->add_option("command", ra.command, "the command and its arguments")
      ->required();
  const CLI::App& root = app;
  r->callback([&st, &root, run] {
    *run = [&st, &root] {
      if (auto ok = check_command(root, st, ra); !ok)
        return report(ok.error());
      return run_command(st, ra);
    };
  });

  static logs_args la;
  auto* l = app.add_subcommand(
      "logs", "a run's output (process.output; -f: the live stream)");
  l->add_option("RUN", la.run, "the run")->required();
  l->add_flag("-f,--follow", la.follow,
              "stream stdout and stderr until the run ends");
  l->add_option("--stream", la.stream, "stdout or stderr")
      ->check(CLI::IsMember({"stdout", "stderr"}));
  l->callback([&st, run] {
    *run = [&st] {
      return logs_command(st, la);
    };
  });

  static std::string ps_run;
  auto* p = app.add_subcommand(
      "ps", "the session's runs, or one run (process.list, process.get)");
  p->add_option("RUN", ps_run, "one run");
  p->callback([&st, run] {
    *run = [&st] {
      return ps_command(st, ps_run);
    };
  });

  static std::string wait_run;
  static int64_t wait_ms = -1;
  auto* w = app.add_subcommand(
      "wait", "wait until a run ends, or for a timeout (process.wait)");
  w->add_option("RUN", wait_run, "the run")->required();
  w->add_option("--timeout-ms", wait_ms, "at most this long (daemon: 30000)");
  w->callback([&st, run] {
    *run = [&st] {
      return wait_command(st, wait_run, wait_ms);
    };
  });
}

} // namespace allox::ctl
