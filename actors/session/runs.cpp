// The runs facet of the SESSION actor: session.configure and process.start,
// get, list, stop, events and output; the run worker's reports (started,
// finished), the run timeout, and the end of the active run at shutdown.
// The worker itself and the run rows are in run_worker.cpp.
#include "actors/session/facets.hpp"
#include "guest/log.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "guest/sandbox/bwrap_args.hpp"
#include "guest/store/run_recovery.hpp"
#include "messages/ids.hpp"
#include "messages/utf8.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace allox::session_facets {

// -- tracked execution --------------------------------------------------------

static caf::error no_execution() {
  return make_error(errc::unsupported,
                    "process tracking is not enabled on this daemon");
}

/// The session's settings over the daemon's defaults.
static json::object effective_settings(self_ptr self) {
  const auto& cfg = *self->state.runs.config;
  json::object limits;
  for (const auto& [k, v] : cfg.default_limits)
    limits[k] = v;
  std::string network = cfg.default_network;
  const auto& text = self->state.init.row.exec_settings;
  if (!text.empty()) {
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    if (!ec && v.is_object()) {
      if (auto* n = v.as_object().if_contains("network"); n && n->is_string())
        network = std::string{n->get_string()};
      if (auto* l = v.as_object().if_contains("limits"); l && l->is_object())
        for (const auto& kv : l->as_object())
          limits[kv.key()] = kv.value();
    }
  }
  return json::object{{"network", network}, {"limits", std::move(limits)}};
}

// Per-session execution settings: the network mode (inherit, or isolated:
// a network namespace with only loopback) and cgroup limits, which are
// refused as unsupported where the controller does not exist. They apply
// to the next run and persist with the session row.
caf::result<json::value> handle_configure(self_ptr self,
                                          const cmd::session_configure& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  if (auto err = require_alive(self))
    return err;
  json::object settings;
  if (!st.init.row.exec_settings.empty()) {
    boost::system::error_code ec;
    auto v = json::parse(st.init.row.exec_settings, ec);
    if (!ec && v.is_object())
      settings = v.as_object();
  }
  if (c.reset)
    settings = {};
  if (!c.network.empty())
    settings["network"] = c.network;
  if (c.has_limits) {
    json::object limits;
    if (auto* old = settings.if_contains("limits"); old && old->is_object())
      limits = old->as_object();
    for (const auto& change : c.limits) {
      if (change.clear) {
        limits.erase(change.name);
        continue;
      }
      if (auto err = check_limit(*st.runs.config, change.name, change.value))
        return err;
      limits[change.name] = change.value;
    }
    settings["limits"] = std::move(limits);
  }
  auto text = settings.empty() ? std::string{} : json::serialize(settings);
  auto rp = self->make_response_promise<json::value>();
  metadata_write w;
  w.set_exec_settings.push_back({st.agent_id(), st.session_id(), text});
  w.audit.push_back(audit(self, "session.configure",
                          {{"origin", c.origin}, {"settings", settings}}));
  commit(
      self, std::move(w),
      [self, rp, text]() mutable {
        self->state.init.row.exec_settings = text;
        auto r = effective_settings(self);
        r["agent_id"] = self->state.agent_id();
        r["session_id"] = self->state.session_id();
        rp.deliver(json::value(std::move(r)));
      },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::result<json::value> handle_process_start(self_ptr self,
                                              const cmd::process_start& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  if (auto err = require_alive(self))
    return err;
  if (mutating(self))
    return conflict("session is being checkpointed or restored: " + st.key());
  if (!st.leases.empty())
    return conflict("session already has an active execution: " + st.key());
  const auto& cfg = *st.runs.config;
  auto id = random_hex_token();
  auto group = cfg.cgroups.session_group(st.agent_id(), st.session_id());
  st.leases["run:" + id] = os::now_ns();
  auto& run = st.runs.runs[id];
  run.row = new_run_row(self, id, group);
  auto settings = effective_settings(self);
  run.row["network_mode"] = settings.at("network");
  run.row["limits"] = settings.at("limits");
  std::vector<std::pair<std::string, std::string>> limits;
  for (const auto& kv : settings.at("limits").as_object())
    limits.emplace_back(std::string{kv.key()},
                        std::string{kv.value().as_string()});
  st.runs.active = id;
  auto rp = self->make_response_promise<json::value>();
  run.waiting_start.push_back(rp);
  sandbox::spec spec;
  spec.bwrap = cfg.bwrap_path;
  spec.init = cfg.init_path;
  spec.current = st.init.paths.current(st.agent_id(), st.session_id());
  spec.shared = st.init.paths.agent_shared(st.agent_id());
  spec.agent_id = st.agent_id();
  spec.session_id = st.session_id();
  spec.env = c.env;
  spec.argv = c.argv;
  spec.isolated_network = settings.at("network") == "isolated";
  self->spawn<caf::detached>(run_worker, caf::actor_cast<session_actor>(self),
                             id, sandbox::bwrap_argv(spec), group,
                             run_dir(cfg, id), json::serialize(run.row),
                             std::move(limits), cfg.cgroups.root());
  self->delayed_send(
      self, std::chrono::milliseconds(static_cast<int64_t>(c.timeout * 1000)),
      run_timeout{id});
  return rp;
}

/// Pushes the run's row to its live streams; a stream that has gone is
/// forgotten, and all are once the run has ended.
static void notify_streams(run_state& run) {
  auto& sinks = run.sinks;
  sinks.erase(std::remove_if(sinks.begin(), sinks.end(),
                             [&](const std::shared_ptr<run_sink>& sink) {
                               return !sink->push(run.row);
                             }),
              sinks.end());
  if (!run.active)
    sinks.clear();
}

/// Kills the run's whole tree (cgroup.kill) with a stop reason, and calls
/// `then` once the run has ended.
void kill_run(self_ptr self, const std::string& id, const std::string& reason,
              std::function<void()> then) {
  auto& st = self->state;
  auto it = st.runs.runs.find(id);
  if (it == st.runs.runs.end() || !it->second.active) {
    if (then)
      then();
    return;
  }
  auto& row = it->second.row;
  if (row.at("stop_reason").is_null())
    row["stop_reason"] = reason;
  if (then)
    it->second.on_end.push_back(std::move(then));
  notify_streams(it->second);
  if (auto err = os::kill_group(std::string{row.at("cgroup").as_string()}))
    log::warn("session", st.key() + ": " + message_of(err));
}

void on_run_started(self_ptr self, const std::string& id, int64_t pid) {
  auto it = self->state.runs.runs.find(id);
  if (it == self->state.runs.runs.end())
    return;
  auto& run = it->second;
  run.row["state"] = "running";
  run.row["root_pid"] = pid;
  for (auto& rp : run.waiting_start)
    rp.deliver(json::value(run.row));
  run.waiting_start.clear();
  notify_streams(run);
  persist_run(self, run.row);
}

void on_run_finished(self_ptr self, const run_finished& e) {
  auto& st = self->state;
  const auto& id = e.run_id;
  bool empty = e.cgroup_empty;
  auto it = st.runs.runs.find(id);
  if (it == st.runs.runs.end())
    return;
  auto& run = it->second;
  auto& row = run.row;
  if (e.exit_code)
    row["root_exit_code"] = *e.exit_code;
  bool ok = empty && !e.error;
  if (e.error)
    row["error"] = *e.error;
  row["state"] =
      !ok ? "failed"
          : (row.at("stop_reason").is_null() ? "completed" : "stopped");
  row["session_fenced"] = !empty;
  row["lifecycle_complete"] = ok;
  row["finished_ns"] = os::now_ns();
  run.active = false;
  if (st.runs.active == id)
    st.runs.active.clear();
  auto group = std::string{row.at("cgroup").as_string()};
  if (empty) {
    // The lease goes with the last process; a group that would not empty
    // keeps the session fenced.
    st.leases.erase("run:" + id);
    os::remove_group(group);
  }
  // A run that failed to start: the failed row tells what happened.
  for (auto& rp : run.waiting_start)
    rp.deliver(json::value(row));
  run.waiting_start.clear();
  for (auto& rp : run.waiting_end)
    rp.deliver(json::value(row));
  run.waiting_end.clear();
  for (auto& [waiter, rp] : run.waiters)
    rp.deliver(json::value(row));
  run.waiters.clear();
  notify_streams(run);
  auto callbacks = std::move(run.on_end);
  run.on_end.clear();
  persist_run(self, row);
  for (auto& f : callbacks)
    f();
}

void shutdown_runs(self_ptr self) {
  auto& st = self->state;
  if (!st.runs.config || st.runs.active.empty())
    return;
  auto& row = st.runs.runs[st.runs.active].row;
  auto group = std::string{row.at("cgroup").as_string()};
  row["stop_reason"] = "daemon_shutdown";
  os::kill_group(group);
  // Shutdown only: waiting here is the point (at most 10 s).
  bool empty = os::wait_empty(group, 10000);
  row["state"] = empty ? "stopped" : "failed";
  row["session_fenced"] = !empty;
  row["lifecycle_complete"] = empty;
  row["finished_ns"] = os::now_ns();
  // A save of this run may still be in flight on a worker thread.
  auto dir = run_dir(*st.runs.config, st.runs.active);
  if (auto err = st.runs.writer->write(dir, row, st.runs.writer->stamp()))
    log::warn("session", "run state not saved at shutdown: " + message_of(err));
  if (empty)
    os::remove_group(group);
}

/// Reads a finished run's state.json; checks it belongs to this session.
static expected<json::object>
load_run(const std::string& dir, const std::string& a, const std::string& s) {
  auto row = store::read_run_row(dir);
  if (!row)
    return row;
  if (row->at("agent_id") != json::value(a) ||
      row->at("session_id") != json::value(s))
    return make_error(errc::invalid_argument,
                      "run does not belong to this Agent/Session");
  return row;
}

caf::result<json::value> handle_process_get(self_ptr self,
                                            const cmd::process_get& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  if (auto it = st.runs.runs.find(c.run_id); it != st.runs.runs.end())
    return json_reply(it->second.row);
  auto dir = run_dir(*st.runs.config, c.run_id);
  auto a = st.agent_id();
  auto s = st.session_id();
  return answer_blocking(self, [dir, a, s]() -> expected<json::value> {
    auto row = load_run(dir, a, s);
    if (!row)
      return row.error();
    return json::value(std::move(*row));
  });
}

caf::result<json::value> handle_process_list(self_ptr self,
                                             const cmd::process_list&) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto root = st.runs.config->audit_root;
  auto a = st.agent_id();
  auto s = st.session_id();
  // Live rows win over what is on disk.
  std::map<std::string, json::object> live;
  for (const auto& [id, run] : st.runs.runs)
    live[id] = run.row;
  return answer_blocking(self, [root, a, s, live]() -> expected<json::value> {
    std::vector<json::object> rows;
    if (auto names = os::list_dir(root))
      for (const auto& id : *names) {
        if (auto it = live.find(id); it != live.end()) {
          rows.push_back(it->second);
          continue;
        }
        if (auto row = load_run(root + "/" + id, a, s))
          rows.push_back(std::move(*row));
      }
    std::sort(rows.begin(), rows.end(), [](auto& x, auto& y) {
      return x.at("created_ns").as_int64() < y.at("created_ns").as_int64();
    });
    json::array out;
    for (auto& r : rows) {
      r.erase("processes");
      out.emplace_back(std::move(r));
    }
    return json::value(std::move(out));
  });
}

caf::result<json::value> handle_process_stop(self_ptr self,
                                             const cmd::process_stop& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto it = st.runs.runs.find(c.run_id);
  if (it == st.runs.runs.end())
    return make_error(errc::invalid_argument,
                      "cannot control a historical run");
  if (!it->second.active)
    return json_reply(it->second.row);
  auto rp = self->make_response_promise<json::value>();
  it->second.waiting_end.push_back(rp);
  kill_run(self, c.run_id, "requested", {});
  return rp;
}

// Answers the moment the run ends, so callers never poll: the promise
// waits in the run's state until on_run_finished, or until its own
// timeout message answers it with the row as it is then.
caf::result<json::value> handle_process_wait(self_ptr self,
                                             const cmd::process_wait& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto it = st.runs.runs.find(c.run_id);
  if (it == st.runs.runs.end())
    return handle_process_get(self, cmd::process_get{c.session, c.run_id});
  auto& run = it->second;
  if (!run.active || c.timeout_ms == 0)
    return json_reply(run.row);
  auto waiter = st.runs.next_waiter++;
  auto rp = self->make_response_promise<json::value>();
  run.waiters.emplace(waiter, rp);
  self->delayed_send(self, std::chrono::milliseconds{c.timeout_ms},
                     wait_timeout{c.run_id, waiter});
  return rp;
}

void on_wait_timeout(self_ptr self, const std::string& id, uint64_t waiter) {
  auto& runs = self->state.runs.runs;
  auto it = runs.find(id);
  if (it == runs.end())
    return;
  auto& waiters = it->second.waiters;
  if (auto w = waiters.find(waiter); w != waiters.end()) {
    w->second.deliver(json::value(it->second.row));
    waiters.erase(w);
  }
}

// A live stream reads the run's logs itself (on the HTTP loop, when
// inotify says they grew); the session only tells it the run's state
// changes, so an idle stream costs nothing here.
caf::result<json::value>
handle_process_subscribe(self_ptr self, const cmd::process_subscribe& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto dir = run_dir(*st.runs.config, c.run_id);
  if (auto it = st.runs.runs.find(c.run_id); it != st.runs.runs.end()) {
    if (it->second.active && c.sink)
      it->second.sinks.push_back(c.sink);
    return json_reply(json::object{{"row", it->second.row}, {"dir", dir}});
  }
  auto a = st.agent_id();
  auto s = st.session_id();
  return answer_blocking(self, [dir, a, s]() -> expected<json::value> {
    auto row = load_run(dir, a, s);
    if (!row)
      return row.error();
    return json::value(json::object{{"row", std::move(*row)}, {"dir", dir}});
  });
}

/// The state of a run this actor knows, or null (an earlier lifetime's).
static json::value live_state(self_ptr self, const std::string& id) {
  auto& runs = self->state.runs.runs;
  auto it = runs.find(id);
  return it == runs.end() ? json::value(nullptr) : it->second.row.at("state");
}

/// Process events need the eBPF tracker: runs carry none yet.
caf::result<json::value> handle_process_events(self_ptr self,
                                               const cmd::process_events& c) {
  if (!self->state.runs.config)
    return no_execution();
  return json_reply(json::object{{"events", json::array{}},
                                 {"next_after", c.after},
                                 {"state", live_state(self, c.run_id)}});
}

caf::result<json::value> handle_process_output(self_ptr self,
                                               const cmd::process_output& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto dir = run_dir(*st.runs.config, c.run_id);
  auto a = st.agent_id();
  auto s = st.session_id();
  auto state = live_state(self, c.run_id);
  return answer_blocking(
      self,
      [dir, a, s, id = c.run_id, stream = c.stream, offset = c.offset,
       limit = c.limit, state]() mutable -> expected<json::value> {
        if (state.is_null()) {
          auto row = load_run(dir, a, s);
          if (!row)
            return row.error();
          state = row->at("state");
        }
        std::ifstream in{dir + "/" + stream + ".log", std::ios::binary};
        std::string data;
        int64_t size = 0;
        if (in) {
          in.seekg(0, std::ios::end);
          size = static_cast<int64_t>(in.tellg());
          if (offset < size) {
            in.seekg(offset);
            data.resize(static_cast<size_t>(std::min(limit, size - offset)));
            in.read(data.data(), static_cast<std::streamsize>(data.size()));
            data.resize(static_cast<size_t>(in.gcount()));
          }
        }
        auto next = offset + static_cast<int64_t>(data.size());
        bool finished = state != "starting" && state != "running";
        return json::value(json::object{{"run_id", id},
                                        {"stream", stream},
                                        {"offset", offset},
                                        {"next_offset", next},
                                        {"size", size},
                                        {"data", valid_utf8(data)},
                                        {"eof", finished && next >= size},
                                        {"state", state}});
      });
}

} // namespace allox::session_facets
