// SPDX-License-Identifier: Apache-2.0
// envd's process.Process service over a sandbox's runs. Start is
// process.start in E2B's view (the workspace at /home/user); its stream
// sends the run's output as the session's logs grow and ends with the
// run's final row. A pid is derived from the run id, so a run keeps it
// for as long as it lives (and across a daemon restart).
//
//   Start/Connect --> process.start / process.get --> start{pid}
//        pump: process.output (stdout, stderr) --> data frames
//              nothing new: poll again later (5 ms doubling to 100 ms)
//        wait: process.wait (long poll) ---------> final: pump at once
//        both logs at their end, run final -----> end{exitCode}, {}
#include "fronts/e2b/handlers.hpp"

#include "messages/commands/runs.hpp"
#include "messages/share.hpp"

#include <algorithm>
#include <cstdlib>

namespace allox::e2b {

namespace {

/// Bytes read from a log per step.
constexpr int64_t read_size = 256 << 10;

/// How long a quiet stream waits at most before it looks again.
constexpr std::chrono::milliseconds max_idle_poll{100};

/// A quiet stream sends a keepalive event this often.
constexpr std::chrono::seconds keepalive_every{30};

/// How long one process.wait of a stream may wait before it is renewed.
constexpr int64_t wait_ms = 30000;

connect::error invalid(std::string msg) {
  return {connect::code::invalid_argument, std::move(msg)};
}

/// The pid E2B's clients know a run by: the run id's first 28 bits, made
/// unique within the sandbox.
uint32_t pid_for(front_self self, const std::string& sandbox,
                 const std::string& run_id) {
  auto& pids = self->state.pids[sandbox];
  for (const auto& [pid, run] : pids)
    if (run == run_id)
      return pid;
  auto pid = static_cast<uint32_t>(
      std::strtoul(run_id.substr(0, 7).c_str(), nullptr, 16));
  pid = std::max<uint32_t>(pid, 2);
  while (pids.count(pid) > 0)
    ++pid;
  pids[pid] = run_id;
  return pid;
}

/// The pid a ProcessSelector names ({pid} or {tag}); 0 when none.
uint32_t selected_pid(const json::object& message) {
  auto* process = message.if_contains("process");
  if (process == nullptr || !process->is_object())
    return 0;
  auto* pid = process->as_object().if_contains("pid");
  if (pid == nullptr)
    return 0;
  if (pid->is_int64() && pid->as_int64() > 0 && pid->as_int64() <= UINT32_MAX)
    return static_cast<uint32_t>(pid->as_int64());
  if (pid->is_string())
    return static_cast<uint32_t>(
        std::strtoul(std::string{pid->as_string()}.c_str(), nullptr, 10));
  return 0;
}

/// Finds the run behind a selector: the pids seen, else the session's
/// runs (a pid handed out before a restart of the front).
template <class OnRun>
void find_run(front_self self, const sandbox& sb, uint32_t pid, OnRun found,
              std::function<void(connect::error)> fail) {
  if (pid == 0)
    return fail(invalid("process must name a pid"));
  auto& known = self->state.pids[sb.id];
  if (auto it = known.find(pid); it != known.end())
    return found(it->second);
  auto id = sb.id;
  call_session(
      self, sb.agent, sb.id, cmd::process_list{{}, 0, {}},
      [self, id, pid, found, fail](run_list& list) mutable {
        for (const auto& row : list.runs)
          if (pid_for(self, id, row.run_id) == pid)
            return found(row.run_id);
        fail({connect::code::not_found,
              "process with pid " + std::to_string(pid) + " not found"});
      },
      [fail](caf::error& err) { fail(connect::from(err)); });
}

std::string event_frame(json::object event) {
  return connect::envelope(
      json::serialize(json::object{{"event", std::move(event)}}));
}

/// The end event of a final row: E2B's exit code and error text.
json::object end_event(const run_row& row) {
  json::object end;
  auto code = row.root_exit_code.value_or(-1);
  bool exited = row.state == run_phase::completed && row.root_exit_code;
  end["exitCode"] = code;
  end["exited"] = exited;
  if (exited) {
    end["status"] = "exit status " + std::to_string(code);
    if (code != 0)
      end["error"] = "exit status " + std::to_string(code);
  } else if (row.state == run_phase::stopped) {
    end["status"] = "signal: killed";
    end["error"] = "signal: killed";
  } else {
    auto why = row.error.value_or(std::string{to_string(row.state)});
    end["status"] = why;
    end["error"] = why;
  }
  return {{"end", std::move(end)}};
}

void send(process_stream& s, std::string frames) {
  s.answer.more(std::move(frames));
  s.last_sent = std::chrono::steady_clock::now();
}

void finish(front_self self, uint64_t id,
            const caf::optional<connect::error>& e, std::string frames = {}) {
  auto it = self->state.streams.find(id);
  if (it == self->state.streams.end())
    return;
  it->second.answer.more(std::move(frames) + connect::end_stream(e), true);
  self->state.streams.erase(it);
}

void schedule(front_self self, uint64_t id, process_stream& s) {
  auto delay = std::chrono::milliseconds{5} * (1 << std::min(s.idle, 5));
  self->delayed_send(self, std::min(delay, max_idle_poll), stream_pump{id});
}

/// Renews the stream's process.wait until the run's row is final.
void watch(front_self self, uint64_t id) {
  auto it = self->state.streams.find(id);
  if (it == self->state.streams.end())
    return;
  auto& s = it->second;
  cmd::process_wait w{{}, s.run_id, wait_ms};
  call_session(
      self, s.agent, s.sandbox, w,
      [self, id](run_row& row) {
        auto found = self->state.streams.find(id);
        if (found == self->state.streams.end())
          return;
        auto& st = found->second;
        if (!is_final(row.state)) {
          if (st.answer.open())
            watch(self, id);
          return;
        }
        st.final = true;
        st.last_row = std::move(row);
        st.idle = 0;
        pump(self, id);
      },
      [self, id](caf::error& err) { finish(self, id, connect::from(err)); });
}

/// Opens a stream of `run_id` (its start event first) and pumps it.
void open_stream(front_self self, const sandbox& sb, http::responder answer,
                 const std::string& run_id, bool pty) {
  auto pid = pid_for(self, sb.id, run_id);
  http::route_response head{
      200,
      std::string{connect::stream_json},
      event_frame(json::object{{"start", json::object{{"pid", pid}}}}),
      {}};
  head.streaming = true;
  answer(std::move(head));
  auto id = self->state.next_stream++;
  auto& s =
      self->state.streams.emplace(id, process_stream{answer}).first->second;
  s.sandbox = sb.id;
  s.agent = sb.agent;
  s.run_id = run_id;
  s.pid = pid;
  s.pty = pty;
  s.last_sent = std::chrono::steady_clock::now();
  watch(self, id);
  pump(self, id);
}

/// process.Process/Start: the run, in E2B's view of the sandbox.
void start(front_self self, request& req, const sandbox& sb) {
  auto msg = connect_body(req, true);
  if (!msg)
    return stream_fail(req.answer(), connect::from(msg.error()));
  auto* process = msg->if_contains("process");
  if (process == nullptr || !process->is_object())
    return stream_fail(req.answer(), invalid("process is required"));
  const auto& p = process->as_object();
  auto* cmd = p.if_contains("cmd");
  if (cmd == nullptr || !cmd->is_string() || cmd->as_string().empty())
    return stream_fail(req.answer(), invalid("process.cmd is required"));
  // The core's own decoder checks what E2B sent, as for every caller.
  json::array argv{*cmd};
  if (auto* args = p.if_contains("args"); args != nullptr && args->is_array())
    for (const auto& a : args->as_array())
      argv.push_back(a);
  json::object env;
  for (const auto& [k, v] : sb.envs)
    env[k] = v;
  if (auto* envs = p.if_contains("envs"); envs != nullptr && envs->is_object())
    for (const auto& kv : envs->as_object())
      env[kv.key()] = kv.value();
  json::object params{{"argv", std::move(argv)},
                      {"env", std::move(env)},
                      {"timeout", cmd::max_run_timeout},
                      {"home", home},
                      {"cwd", home}};
  if (auto* cwd = p.if_contains("cwd");
      cwd != nullptr && cwd->is_string() && !cwd->as_string().empty())
    params["cwd"] = *cwd;
  bool pty = false;
  if (auto* t = msg->if_contains("pty"); t != nullptr && t->is_object()) {
    auto* size = t->as_object().if_contains("size");
    if (size != nullptr && size->is_object()) {
      params["pty"] = json::object{{"rows", size->as_object().contains("rows")
                                                ? size->as_object().at("rows")
                                                : json::value(24)},
                                   {"cols", size->as_object().contains("cols")
                                                ? size->as_object().at("cols")
                                                : json::value(80)}};
      pty = true;
    }
  }
  if (auto* in = msg->if_contains("stdin"); in != nullptr && in->is_bool())
    params["stdin"] = in->as_bool() && !pty;
  auto c = cmd::decode<cmd::process_start>(params);
  if (!c)
    return stream_fail(req.answer(), connect::from(c.error()));
  auto answer = req.answer();
  auto id = sb.id;
  call_session(
      self, sb.agent, sb.id, std::move(*c),
      [self, id, answer, pty](run_row& row) {
        auto it = self->state.sandboxes.find(id);
        if (it == self->state.sandboxes.end())
          return stream_fail(
              answer, {connect::code::unavailable, "the sandbox was killed"});
        open_stream(self, it->second, answer, row.run_id, pty);
      },
      [answer](caf::error& err) { stream_fail(answer, connect::from(err)); });
}

/// process.Process/Connect: a stream of a run already started, its output
/// from the start.
void connect_to(front_self self, request& req, const sandbox& sb) {
  auto msg = connect_body(req, true);
  if (!msg)
    return stream_fail(req.answer(), connect::from(msg.error()));
  auto answer = req.answer();
  auto id = sb.id;
  find_run(
      self, sb, selected_pid(*msg),
      [self, id, answer](const std::string& run_id) {
        auto it = self->state.sandboxes.find(id);
        if (it == self->state.sandboxes.end())
          return;
        open_stream(self, it->second, answer, run_id, false);
      },
      [answer](connect::error e) { stream_fail(answer, e); });
}

/// process.Process/List: the runs still alive.
void list(front_self self, request& req, const sandbox& sb) {
  auto answer = req.answer();
  auto id = sb.id;
  call_session(
      self, sb.agent, sb.id, cmd::process_list{{}, 0, {}},
      [self, id, answer](run_list& runs) {
        json::array processes;
        for (const auto& row : runs.runs) {
          if (is_final(row.state))
            continue;
          json::object config{
              {"cmd", ""}, {"args", json::array{}}, {"envs", json::object{}}};
          if (row.argv && !row.argv->empty()) {
            config["cmd"] = row.argv->front();
            json::array args;
            for (size_t i = 1; i < row.argv->size(); ++i)
              args.emplace_back((*row.argv)[i]);
            config["args"] = std::move(args);
          }
          processes.emplace_back(
              json::object{{"config", std::move(config)},
                           {"pid", pid_for(self, id, row.run_id)}});
        }
        connect_ok(answer, {{"processes", std::move(processes)}});
      },
      [answer](caf::error& err) { connect_fail(answer, connect::from(err)); });
}

/// The unary calls on one process: find its run, then `then(run_id)`.
template <class Then>
void on_process(front_self self, request& req, const sandbox& sb, Then then) {
  auto msg = connect_body(req, false);
  if (!msg)
    return connect_fail(req.answer(), connect::from(msg.error()));
  auto answer = req.answer();
  auto pid = selected_pid(*msg);
  find_run(
      self, sb, pid,
      [msg = std::move(*msg), then, answer](const std::string& run_id) mutable {
        then(run_id, msg, answer);
      },
      [answer](connect::error e) { connect_fail(answer, e); });
}

/// Answers a unary call with {} once the session did it.
template <class Command>
void forward(front_self self, const sandbox& sb, Command c,
             const http::responder& answer) {
  call_session(
      self, sb.agent, sb.id, std::move(c),
      [answer](cmd::reply_t<Command>&) { connect_ok(answer, {}); },
      [answer](caf::error& err) { connect_fail(answer, connect::from(err)); });
}

/// Input bytes of a ProcessInput ({stdin} or {pty}, base64).
expected<std::string> input_bytes(const json::object& msg) {
  auto* input = msg.if_contains("input");
  if (input == nullptr || !input->is_object())
    return make_error(errc::invalid_argument, "input is required");
  for (const auto* key : {"stdin", "pty"})
    if (auto* v = input->as_object().if_contains(key);
        v != nullptr && v->is_string()) {
      std::string out;
      if (!decode_base64_strict(v->as_string(), out))
        return make_error(errc::invalid_argument,
                          std::string{"input."} + key + " is not base64");
      return out;
    }
  return make_error(errc::invalid_argument, "input needs stdin or pty bytes");
}

} // namespace

void serve_process(front_self self, request& req, const sandbox& sb,
                   std::string_view method) {
  if (!self->state.init.execution) {
    auto e = connect::error{connect::code::unimplemented,
                            "this daemon runs no processes (start it with "
                            "--process-audit-root)"};
    if (method == "Start" || method == "Connect")
      return stream_fail(req.answer(), e);
    return connect_fail(req.answer(), e);
  }
  if (method == "Start")
    return start(self, req, sb);
  if (method == "Connect")
    return connect_to(self, req, sb);
  if (method == "List")
    return list(self, req, sb);
  auto box = sb;
  if (method == "SendInput")
    return on_process(
        self, req, sb,
        [self, box](const std::string& run_id, const json::object& msg,
                    const http::responder& answer) {
          auto data = input_bytes(msg);
          if (!data)
            return connect_fail(answer, connect::from(data.error()));
          forward(self, box, cmd::process_input{{}, run_id, *data, false},
                  answer);
        });
  if (method == "CloseStdin")
    return on_process(
        self, req, sb,
        [self, box](const std::string& run_id, const json::object&,
                    const http::responder& answer) {
          forward(self, box, cmd::process_input{{}, run_id, {}, true}, answer);
        });
  if (method == "SendSignal")
    // SIGKILL and SIGTERM alike end the run's whole tree (its cgroup).
    return on_process(
        self, req, sb,
        [self, box](const std::string& run_id, const json::object&,
                    const http::responder& answer) {
          forward(self, box, cmd::process_stop{{}, run_id}, answer);
        });
  if (method == "Update")
    return on_process(
        self, req, sb,
        [self, box](const std::string& run_id, const json::object& msg,
                    const http::responder& answer) {
          auto* pty = msg.if_contains("pty");
          const json::value* size = pty != nullptr && pty->is_object()
                                        ? pty->as_object().if_contains("size")
                                        : nullptr;
          if (size == nullptr || !size->is_object())
            return connect_fail(answer, invalid("pty.size is required"));
          auto c = cmd::decode<cmd::process_resize>(
              json::object{{"run_id", run_id},
                           {"rows", size->as_object().contains("rows")
                                        ? size->as_object().at("rows")
                                        : json::value(0)},
                           {"cols", size->as_object().contains("cols")
                                        ? size->as_object().at("cols")
                                        : json::value(0)}});
          if (!c)
            return connect_fail(answer, connect::from(c.error()));
          forward(self, box, std::move(*c), answer);
        });
  if (method == "StreamInput")
    return connect_fail(req.answer(),
                        {connect::code::unimplemented,
                         "StreamInput needs HTTP/2; use SendInput"});
  connect_fail(req.answer(),
               {connect::code::unimplemented,
                "no such call: process.Process/" + std::string{method}});
}

namespace {

/// Reads log `which` (0 stdout, 1 stderr) of a stream from its offset and
/// sends what it got; `got`: an earlier log of this step had news,
/// `at_end`: every earlier log is at its end. After stderr, the step
/// decides: end the stream, look again at once, or later.
void read_log(front_self self, uint64_t id, int which, bool got, bool at_end) {
  auto it = self->state.streams.find(id);
  if (it == self->state.streams.end())
    return;
  auto& s = it->second;
  if (which == 2) {
    s.reading = false;
    if (s.final && at_end && s.last_row)
      return finish(self, id, caf::none, event_frame(end_event(*s.last_row)));
    if (got) {
      s.idle = 0;
      self->send(self, stream_pump{id});
      return;
    }
    ++s.idle;
    if (std::chrono::steady_clock::now() - s.last_sent >= keepalive_every)
      send(s, event_frame(json::object{{"keepalive", json::object{}}}));
    return schedule(self, id, s);
  }
  cmd::process_output c{{},
                        s.run_id,
                        which == 0 ? "stdout" : "stderr",
                        s.offsets[which],
                        read_size};
  call_session(
      self, s.agent, s.sandbox, c,
      [self, id, which, got, at_end](output_slice& slice) {
        auto found = self->state.streams.find(id);
        if (found == self->state.streams.end())
          return;
        auto& st = found->second;
        bool more = !slice.data.empty();
        if (more) {
          st.offsets[which] = slice.next_offset;
          auto key = st.pty ? "pty" : which == 0 ? "stdout" : "stderr";
          send(st,
               event_frame(json::object{
                   {"data", json::object{{key, encode_base64(slice.data)}}}}));
        }
        read_log(self, id, which + 1, got || more,
                 at_end && slice.eof && !more);
      },
      [self, id](caf::error& err) { finish(self, id, connect::from(err)); });
}

} // namespace

void pump(front_self self, uint64_t id) {
  auto it = self->state.streams.find(id);
  if (it == self->state.streams.end())
    return;
  auto& s = it->second;
  if (!s.answer.open()) {
    // The client went away; the process goes on (Connect finds it).
    self->state.streams.erase(it);
    return;
  }
  if (s.reading)
    return;
  s.reading = true;
  read_log(self, id, 0, false, true);
}

} // namespace allox::e2b
