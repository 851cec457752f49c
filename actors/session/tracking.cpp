// SPDX-License-Identifier: Apache-2.0
// The tracking facet of the SESSION actor: what the TRACKER sends about
// the session's tracked runs (batches of process events, failures), each
// run's process map and its append-only events.jsonl, the drain that ends
// a tracked run, and the queries process.events and process.tree.
//
// A run's process map lives in its row (`processes`, reference 9.5) and is
// persisted with the row's transitions; its events are appended to
// <run dir>/events.jsonl on the session's read lane, one write per batch.
#include "actors/session/handlers.hpp"
#include "actors/session/process_map.hpp"
#include "guest/log.hpp"
#include "guest/os/fs.hpp"
#include "messages/results/processes_json.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <utility>

namespace allox::session_facets {

namespace {

/// Appends `text` to the run's events.jsonl in one write, opening it on
/// the first.
caf::error append(event_log& log, const std::string& text) {
  if (!log.fd) {
    log.fd.reset(::open(log.path.c_str(),
                        O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (!log.fd)
      return make_error(errc::internal, "cannot open " + log.path);
  }
  size_t done = 0;
  while (done < text.size()) {
    auto n = ::write(log.fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return make_error(errc::internal, "cannot write " + log.path);
    done += static_cast<size_t>(n);
  }
  return caf::none;
}

} // namespace

bool tracking_on(self_ptr self) {
  const auto& cfg = self->state.runs.config;
  return cfg && static_cast<bool>(cfg->tracker);
}

uint64_t new_cookie() {
  // Below 2^53, so that JSON clients read it exactly.
  static std::atomic<uint64_t> next{[] {
    std::random_device rd;
    return ((uint64_t{rd()} << 16) % (uint64_t{1} << 40)) + 1;
  }()};
  return next++;
}

void on_event_batch(self_ptr self, const process_event_batch& b) {
  auto& st = self->state;
  // Per run of the batch: where its events go, their events.jsonl lines
  // and the lines' common tail, found once per batch, not per event.
  struct lines_of_run {
    run_state* run = nullptr;
    std::shared_ptr<event_log> log;
    std::string ids;
    std::string text;
  };
  std::map<std::string, lines_of_run> lines;
  uint64_t last_cookie = 0;
  lines_of_run* out = nullptr;
  for (const auto& e : b.events) {
    if (out == nullptr || e.cookie != last_cookie) {
      out = nullptr;
      auto c = st.runs.by_cookie.find(e.cookie);
      if (c == st.runs.by_cookie.end())
        continue;
      auto it = st.runs.runs.find(c->second);
      if (it == st.runs.runs.end())
        continue;
      last_cookie = e.cookie;
      out = &lines[c->second];
      if (out->run == nullptr) {
        auto& run = it->second;
        out->run = &run;
        if (!run.events_file)
          run.events_file = std::make_shared<event_log>(event_log{
              logs_of(*st.runs.config, run.row) + "/events.jsonl", {}});
        out->log = run.events_file;
        out->ids = event_line_ids(c->second, st.session_id(), st.agent_id());
      }
    }
    // Looked up per event: the root's event adds a field to the row,
    // which may move the row's values (a pointer kept across would dangle).
    auto& row = out->run->row;
    auto& process = apply_event(row.processes, row, e);
    auto seq = ++out->run->events;
    ++st.runs.events_received;
    // The parent of a process is the one its fork named.
    auto ppid =
        e.kind == process_event_kind::fork ? int64_t{e.ppid} : process.ppid;
    append_event_line(out->text, seq, e, ppid, out->ids);
  }
  for (auto& entry : lines)
    entry.second.run->row.event_count =
        static_cast<int64_t>(entry.second.run->events);
  for (auto& [id, run_lines] : lines) {
    auto key = st.key();
    read_step<step_done>(
        self,
        [log = std::move(run_lines.log),
         text = std::move(run_lines.text)]() -> expected<step_done> {
          if (auto err = append(*log, text))
            return err;
          return step_done{};
        },
        [](step_done&) {},
        [key](caf::error err) {
          log::warn("session", key + ": events not saved: " + message_of(err));
        });
  }
}

void on_tracking_failure(self_ptr self, const tracking_failure& f) {
  auto& st = self->state;
  for (size_t i = 0; i < f.cookies.size(); ++i) {
    auto c = st.runs.by_cookie.find(f.cookies[i]);
    if (c == st.runs.by_cookie.end())
      continue;
    auto it = st.runs.runs.find(c->second);
    if (it == st.runs.runs.end())
      continue;
    auto& run = it->second;
    if (!run.active && !run.draining)
      continue;
    run.trace_failed = true;
    auto lost = i < f.lost.size() ? f.lost[i] : 0;
    if (lost > run.events_lost) {
      st.runs.events_lost += lost - run.events_lost;
      run.events_lost = lost;
    }
    run.row.events_lost = static_cast<int64_t>(run.events_lost);
    run.row.trace_complete = false;
    if (!run.row.provider_error)
      run.row.provider_error = f.reason;
    log::warn("session", st.key() + ": run " + c->second + ": " + f.reason);
    if (run.active)
      kill_run(self, c->second, "provider_failure", {});
  }
}

/// Runs `then` once the events appended so far are in events.jsonl: the
/// read lane runs its jobs in order, so an empty step behind the appends
/// marks their end. A live stream and process.events then find every
/// event of a run that has ended.
static void after_appends(self_ptr self, std::function<void()> then) {
  read_step<step_done>(
      self, []() -> expected<step_done> { return step_done{}; },
      [then](step_done&) { then(); }, [then](caf::error) { then(); });
}

void drain_run(self_ptr self, const std::string& id,
               std::function<void()> then) {
  uint64_t cookie = 0;
  if (auto it = self->state.runs.runs.find(id);
      it != self->state.runs.runs.end())
    cookie = it->second.cookie;
  if (cookie == 0 || !tracking_on(self)) {
    then();
    return;
  }
  // The end of the run as the cgroup saw it (empty) and as the events saw
  // it (every process exited, nothing lost) must agree.
  auto settle = [self, id, cookie](const trace_summary* s,
                                   const std::string& error) {
    auto& st = self->state;
    st.runs.by_cookie.erase(cookie);
    auto it = st.runs.runs.find(id);
    if (it == st.runs.runs.end())
      return;
    auto& run = it->second;
    auto& row = run.row;
    // Its last append holds the file until the lane has run it.
    run.events_file.reset();
    // A run that never started has no trace to lose (its start failed,
    // which its row says); it does not fence the session.
    bool ran = static_cast<bool>(row.root_pid);
    uint64_t lost = !ran ? 0
                    : s  ? s->lost
                         : std::max<uint64_t>(run.events_lost, 1);
    if (lost > run.events_lost) {
      st.runs.events_lost += lost - run.events_lost;
      run.events_lost = lost;
    }
    if (ran && (!s || lost > 0 || !s->drained || run.events != s->received)) {
      run.trace_failed = true;
      if (!row.provider_error)
        row.provider_error = s ? "process events lost" : error;
    }
    row.events_lost = static_cast<int64_t>(run.events_lost);
    row.trace_complete =
        !run.trace_failed && !row.session_fenced && all_exited(row.processes);
  };
  self->request(self->state.runs.config->tracker, std::chrono::seconds{10},
                atom::untrack_v, cookie)
      .then(
          [self, settle, then](trace_summary& s) {
            settle(&s, {});
            after_appends(self, then);
          },
          [self, settle, then](caf::error& err) {
            settle(nullptr, "process tracker: " + message_of(err));
            after_appends(self, then);
          });
}

caf::result<event_page> handle(self_ptr self, const cmd::process_events& c) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto rp = self->make_response_promise<event_page>();
  row_view_of(
      self, c.run_id,
      [self, rp, c](const run_row& row) mutable {
        auto path = logs_of(*self->state.runs.config, row) + "/events.jsonl";
        event_page page;
        page.run_id = c.run_id;
        page.next_after = c.after;
        page.state = row.state;
        page.trace_complete = row.trace_complete;
        read_step<event_page>(
            self,
            [path, c,
             page = std::move(page)]() mutable -> expected<event_page> {
              std::ifstream in{path};
              std::string line;
              while (std::getline(in, line)) {
                // A line cut by a crash is not an event.
                auto e = parse_event_line(line);
                if (!e || static_cast<int64_t>(e->seq) <= c.after)
                  continue;
                if (static_cast<int64_t>(page.events.size()) >= c.limit) {
                  page.has_more = true;
                  break;
                }
                page.next_after = static_cast<int64_t>(e->seq);
                page.events.push_back(std::move(*e));
              }
              return std::move(page);
            },
            [rp](event_page& p) mutable { rp.deliver(std::move(p)); },
            [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
      },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::result<process_tree_view> handle(self_ptr self,
                                      const cmd::process_tree& c) {
  if (!self->state.runs.config)
    return no_execution();
  auto rp = self->make_response_promise<process_tree_view>();
  row_of(
      self, c.run_id,
      [rp, c](run_row row) mutable {
        process_tree_view view;
        view.run_id = c.run_id;
        view.state = row.state;
        view.trace_complete = row.trace_complete;
        view.processes = row.processes.size();
        view.tree = nest(row.processes);
        rp.deliver(std::move(view));
      },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

} // namespace allox::session_facets
