// SPDX-License-Identifier: Apache-2.0
// The command tools: a command is a run of the session (process.start), so
// it is tracked, listed, audited and shown by the console as every run.
// command_run waits for it (process.wait, in slices while it reports
// progress) and reads its output (process.output); a command longer than
// the wait goes on, and command_output follows it by cursor.
#include "fronts/mcp/calls.hpp"

#include "messages/commands/runs.hpp"
#include "messages/results/processes_json.hpp"
#include "messages/results/runs_json.hpp"
#include "messages/utf8.hpp"

#include <chrono>
#include <cstdio>
#include <memory>

namespace allox::mcp {

namespace {

using clock_type = std::chrono::steady_clock;

/// The most output of each stream one result carries; the cursor says
/// where the rest starts.
constexpr int64_t output_per_result = 256 * 1024;

/// How long command_run waits by default (below the 60 s many clients
/// give a call), and at most.
constexpr double default_wait_s = 50;
constexpr double max_wait_s = 3600;

/// How long a run may live unless command_start says otherwise.
constexpr double default_run_s = 3600;

/// Where a run's stdout and stderr were read up to: "<stdout>:<stderr>".
struct cursor {
  int64_t out = 0;
  int64_t err = 0;

  std::string text() const {
    return std::to_string(out) + ":" + std::to_string(err);
  }

  static expected<cursor> parse(const json::value& v) {
    cursor c;
    if (v.is_null())
      return c;
    long long out = 0;
    long long err = 0;
    char end = 0;
    if (!v.is_string() ||
        std::sscanf(std::string{v.as_string()}.c_str(), "%lld:%lld%c", &out,
                    &err, &end) != 2 ||
        out < 0 || err < 0)
      return make_error(errc::invalid_argument,
                        "cursor must be one a command tool returned");
    c.out = out;
    c.err = err;
    return c;
  }
};

/// The run's output since `from`, and its row's state, as the tool's
/// result, to `done`.
void read_output(const tool_call& call, const run_row& row, cursor from) {
  struct gathered {
    run_row row;
    cursor next;
    std::string out, err;
    bool more = false;
  };
  auto g = std::make_shared<gathered>();
  g->row = row;
  g->next = from;
  auto slice = [](const std::string& run_id, const char* stream,
                  int64_t offset) {
    cmd::process_output c;
    c.run_id = run_id;
    c.stream = stream;
    c.offset = offset;
    c.limit = output_per_result;
    return c;
  };
  auto finish = [call, g] {
    const auto& r = g->row;
    json::object out{{"run_id", r.run_id},
                     {"state", to_string(r.state)},
                     {"exit_code", r.root_exit_code
                                       ? json::value(*r.root_exit_code)
                                       : json::value(nullptr)},
                     {"stop_reason", r.stop_reason ? json::value(*r.stop_reason)
                                                   : json::value(nullptr)},
                     {"stdout", valid_utf8(g->out)},
                     {"stderr", valid_utf8(g->err)},
                     {"cursor", g->next.text()},
                     {"truncated", g->more}};
    call.done(std::move(out));
  };
  to_session(call, slice(row.run_id, "stdout", from.out),
             [call, g, slice, finish](output_slice& o) {
               // Whole characters only: the rest comes with the next cursor.
               auto keep = o.eof ? o.data.size() : whole_utf8_prefix(o.data);
               g->out = o.data.substr(0, keep);
               g->next.out = o.offset + static_cast<int64_t>(keep);
               g->more = g->next.out < o.size;
               to_session(call, slice(g->row.run_id, "stderr", g->next.err),
                          [g, finish](output_slice& e) {
                            auto whole = e.eof ? e.data.size()
                                               : whole_utf8_prefix(e.data);
                            g->err = e.data.substr(0, whole);
                            g->next.err =
                                e.offset + static_cast<int64_t>(whole);
                            g->more = g->more || g->next.err < e.size;
                            // The row read last is the newer state.
                            if (is_final(e.state) && !is_final(g->row.state))
                              g->row.state = e.state;
                            finish();
                          });
             });
}

/// Waits for the run until it ends or `deadline`, in slices of a second
/// while the client wants progress; then its output.
void wait_for(const tool_call& call, std::string run_id,
              clock_type::time_point started, clock_type::time_point deadline) {
  using namespace std::chrono;
  auto left = duration_cast<milliseconds>(deadline - clock_type::now());
  auto slice = std::min<int64_t>(std::max<int64_t>(left.count(), 0),
                                 call.progress ? 1000 : 300000);
  cmd::process_wait w;
  w.run_id = run_id;
  w.timeout_ms = slice;
  to_session(call, w, [call, started, deadline](run_row& row) {
    auto now = clock_type::now();
    if (is_final(row.state) || now >= deadline)
      return read_output(call, row, {});
    if (call.progress) {
      auto waited = duration<double>(now - started).count();
      auto total = duration<double>(deadline - started).count();
      call.progress(waited, total,
                    "running for " + std::to_string(static_cast<int>(waited)) +
                        " s");
    }
    wait_for(call, row.run_id, started, deadline);
  });
}

/// process.start's parameters from the tool's arguments.
expected<json::object> start_params(const tool_call& call, bool run) {
  json::object p;
  auto command = arg(call, "command");
  auto argv = arg(call, "argv");
  if (command.is_string() && !argv.is_null())
    return make_error(errc::invalid_argument, "give command or argv, not both");
  if (command.is_string())
    p["argv"] = json::array{"/bin/sh", "-c", command};
  else if (!argv.is_null())
    p["argv"] = argv;
  else
    return make_error(errc::invalid_argument,
                      "command (a shell line) or argv is required");
  if (auto env = arg(call, "env"); !env.is_null())
    p["env"] = env;
  if (auto cwd = arg(call, "cwd"); !cwd.is_null())
    p["cwd"] = cwd;
  p["timeout"] = default_run_s;
  if (!run) {
    if (auto t = arg(call, "timeout_s"); !t.is_null())
      p["timeout"] = t;
    auto in = arg(call, "stdin");
    p["stdin"] = in.is_bool() ? in.as_bool() : true;
  }
  return p;
}

/// timeout_s of command_run: how long to wait.
expected<double> wait_of(const tool_call& call) {
  auto t = arg(call, "timeout_s");
  if (t.is_null())
    return default_wait_s;
  if (!t.is_number() || t.to_number<double>() <= 0 ||
      t.to_number<double>() > max_wait_s)
    return make_error(errc::invalid_argument,
                      "timeout_s must be a number of seconds, 0 to 3600");
  return t.to_number<double>();
}

void start(const tool_call& call, bool run) {
  auto p = start_params(call, run);
  if (!p)
    return call.failed(p.error());
  double wait = 0;
  if (run) {
    auto w = wait_of(call);
    if (!w)
      return call.failed(w.error());
    wait = *w;
  }
  auto c = decoded<cmd::process_start>(call, *p);
  if (!c)
    return;
  to_session(call, std::move(*c), [call, run, wait](run_row& row) {
    if (!run)
      return read_output(call, row, {});
    auto now = clock_type::now();
    auto deadline = now + std::chrono::duration_cast<clock_type::duration>(
                              std::chrono::duration<double>(wait));
    wait_for(call, row.run_id, now, deadline);
  });
}

/// The run named by run_id (checked by the core's decoders).
json::object run_params(const tool_call& call) {
  return json::object{{"run_id", arg(call, "run_id")}};
}

void output(const tool_call& call) {
  auto from = cursor::parse(arg(call, "cursor"));
  if (!from)
    return call.failed(from.error());
  auto c = decoded<cmd::process_get>(call, run_params(call));
  if (!c)
    return;
  to_session(call, std::move(*c), [call, from = *from](run_row& row) {
    read_output(call, row, from);
  });
}

void input(const tool_call& call) {
  auto p = run_params(call);
  auto data = arg(call, "data");
  if (!data.is_null())
    p["data"] = data;
  p["eof"] = arg(call, "eof");
  if (p["eof"].is_null())
    p["eof"] = false;
  auto c = decoded<cmd::process_input>(call, p);
  if (!c)
    return;
  // What the run took: a full pipe takes part of the data, and the rest
  // is the agent's to send again.
  to_session(call, std::move(*c), [call](input_result& r) {
    call.done(json::object{
        {"run_id", r.run_id}, {"bytes", r.written}, {"eof", r.eof}});
  });
}

void stop(const tool_call& call) {
  if (!confirmed(call, "command_stop"))
    return;
  auto c = decoded<cmd::process_stop>(call, run_params(call));
  if (!c)
    return;
  to_session(call, std::move(*c),
             [call](run_row& row) { read_output(call, row, {}); });
}

void tree(const tool_call& call) {
  auto c = decoded<cmd::process_tree>(call, run_params(call));
  if (!c)
    return;
  to_session(call, std::move(*c),
             [call](process_tree_view& v) { call.done(to_json(v)); });
}

} // namespace

void call_commands(tool_call call) {
  switch (call.tool->id) {
  case tool_id::command_run:
    return start(call, true);
  case tool_id::command_start:
    return start(call, false);
  case tool_id::command_output:
    return output(call);
  case tool_id::command_input:
    return input(call);
  case tool_id::command_stop:
    return stop(call);
  default:
    return tree(call);
  }
}

} // namespace allox::mcp
