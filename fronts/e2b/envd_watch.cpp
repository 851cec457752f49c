// SPDX-License-Identifier: Apache-2.0
// envd's directory watches in E2B's view: filesystem.Filesystem/WatchDir,
// a server stream of the changes under a directory, and the polling
// watchers (CreateWatcher, GetWatcherEvents, RemoveWatcher). Both read a
// watch the sandbox's session holds (file.watch: inotify, recursive on
// request; actors/session/watches.cpp); the stream reads it on the actor's
// timer and ends at the client's Connect-Timeout-Ms, when the client goes
// away, or when the watch ends (a rollback, the sandbox killed).
//
//   WatchDir {path, recursive} -> file.watch -> 200, {"start":{}}
//   every 100 ms: file.watch_events -> {"filesystem":{name, type}} frames
//                 (quiet for 30 s: {"keepalive":{}})
//   timeout, client gone or error -> file.unwatch, end-stream frame
#include "fronts/e2b/handlers.hpp"

#include "messages/commands/files.hpp"

#include <chrono>

namespace allox::e2b {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr std::chrono::milliseconds poll_every{100};
constexpr std::chrono::seconds keepalive_every{30};
/// A stream without Connect-Timeout-Ms ends after this long.
constexpr std::chrono::hours longest_stream{24};

/// E2B's EventType name of a change.
std::string_view event_type(change_kind k) {
  switch (k) {
  case change_kind::create:
    return "EVENT_TYPE_CREATE";
  case change_kind::write:
    return "EVENT_TYPE_WRITE";
  case change_kind::remove:
    return "EVENT_TYPE_REMOVE";
  case change_kind::rename:
    return "EVENT_TYPE_RENAME";
  case change_kind::chmod:
    break;
  }
  return "EVENT_TYPE_CHMOD";
}

json::object event_json(const file_change& c) {
  auto type = event_type(c.kind);
  return json::object{{"name", c.name},
                      {"type", json::string_view{type.data(), type.size()}}};
}

std::string frame(json::object message) {
  return connect::envelope(json::serialize(message));
}

/// The watched path and recursive flag of a WatchDir or CreateWatcher
/// message; false (answered through `fail`) when the path is bad.
template <class Fail>
bool watch_args(const json::object& msg, cmd::file_watch& c, Fail fail) {
  auto* p = msg.if_contains("path");
  if (p == nullptr || !p->is_string()) {
    fail(connect::error{connect::code::invalid_argument, "path is required"});
    return false;
  }
  auto rel = workspace_path(p->as_string());
  if (!rel) {
    fail(connect::from(rel.error()));
    return false;
  }
  c.path = std::move(*rel);
  auto* r = msg.if_contains("recursive");
  c.recursive = r != nullptr && r->is_bool() && r->as_bool();
  return true;
}

/// Ends stream `id`: its watch closed, the end-stream frame with `e`.
void end_watch(front_self self, uint64_t id,
               const caf::optional<connect::error>& e) {
  auto it = self->state.watch_streams.find(id);
  if (it == self->state.watch_streams.end())
    return;
  auto& s = it->second;
  call_session(
      self, s.agent, s.sandbox, cmd::file_unwatch{{}, s.watch_id},
      [](watch_changes&) {
        // nop: the stream has ended
      },
      [](caf::error&) {
        // nop: the session (or its watch) is gone already
      });
  s.answer.more(connect::end_stream(e), true);
  self->state.watch_streams.erase(it);
}

} // namespace

void watch_dir(front_self self, request& req, const sandbox& sb) {
  auto msg = connect_body(req, true);
  if (!msg)
    return stream_fail(req.answer(), connect::from(msg.error()));
  auto answer = req.answer();
  cmd::file_watch c;
  if (!watch_args(*msg, c,
                  [&answer](connect::error e) { stream_fail(answer, e); }))
    return;
  auto timeout = clock_type::now() + longest_stream;
  auto ms = req.header("Connect-Timeout-Ms");
  if (!ms.empty())
    timeout = clock_type::now() +
              std::chrono::milliseconds{std::strtoll(ms.c_str(), nullptr, 10)};
  auto box = sb;
  call_session(
      self, sb.agent, sb.id, c,
      [self, box, answer, timeout](watch_opened& w) {
        http::route_response head{
            200,
            std::string{connect::stream_json},
            frame(json::object{{"start", json::object{}}}),
            {}};
        head.streaming = true;
        answer(std::move(head));
        auto id = self->state.next_stream++;
        auto& s = self->state.watch_streams.emplace(id, watch_stream{answer})
                      .first->second;
        s.sandbox = box.id;
        s.agent = box.agent;
        s.watch_id = w.watch_id;
        s.deadline = timeout;
        s.last_sent = clock_type::now();
        self->delayed_send(self, poll_every, watch_pump{id});
      },
      [answer](caf::error& err) { stream_fail(answer, connect::from(err)); });
}

void pump_watch(front_self self, uint64_t id) {
  auto it = self->state.watch_streams.find(id);
  if (it == self->state.watch_streams.end())
    return;
  auto& s = it->second;
  if (!s.answer.open() || clock_type::now() >= s.deadline)
    return end_watch(self, id, caf::none);
  call_session(
      self, s.agent, s.sandbox, cmd::file_watch_events{{}, s.watch_id},
      [self, id](watch_changes& w) {
        auto found = self->state.watch_streams.find(id);
        if (found == self->state.watch_streams.end())
          return;
        auto& st = found->second;
        std::string frames;
        for (const auto& c : w.changes)
          frames += frame(json::object{{"filesystem", event_json(c)}});
        if (frames.empty() &&
            clock_type::now() - st.last_sent >= keepalive_every)
          frames = frame(json::object{{"keepalive", json::object{}}});
        if (!frames.empty()) {
          st.answer.more(std::move(frames));
          st.last_sent = clock_type::now();
        }
        self->delayed_send(self, poll_every, watch_pump{id});
      },
      [self, id](caf::error& err) { end_watch(self, id, connect::from(err)); });
}

void serve_watcher(front_self self, request& req, const sandbox& sb,
                   std::string_view method) {
  auto msg = connect_body(req, false);
  if (!msg)
    return connect_fail(req.answer(), connect::from(msg.error()));
  auto answer = req.answer();
  auto fail = [answer](caf::error& err) {
    connect_fail(answer, connect::from(err));
  };
  if (method == "CreateWatcher") {
    cmd::file_watch c;
    if (!watch_args(*msg, c,
                    [&answer](connect::error e) { connect_fail(answer, e); }))
      return;
    auto box = sb;
    return call_session(
        self, sb.agent, sb.id, c,
        [self, box, answer](watch_opened& w) {
          auto wid = box.id + "-" + std::to_string(w.watch_id);
          self->state.watchers[wid] = watcher{box.id, box.agent, w.watch_id};
          connect_ok(answer, json::object{{"watcherId", wid}});
        },
        fail);
  }
  auto* given = msg->if_contains("watcherId");
  auto it = given != nullptr && given->is_string()
                ? self->state.watchers.find(std::string{given->as_string()})
                : self->state.watchers.end();
  if (it == self->state.watchers.end() || it->second.sandbox != sb.id)
    return connect_fail(answer, {connect::code::not_found,
                                 "no such watcher in sandbox " + sb.id});
  auto w = it->second;
  if (method == "RemoveWatcher") {
    self->state.watchers.erase(it);
    return call_session(
        self, w.agent, w.sandbox, cmd::file_unwatch{{}, w.watch_id},
        [answer](watch_changes&) { connect_ok(answer, json::object{}); }, fail);
  }
  call_session(
      self, w.agent, w.sandbox, cmd::file_watch_events{{}, w.watch_id},
      [answer](watch_changes& changes) {
        json::array events;
        for (const auto& c : changes.changes)
          events.push_back(event_json(c));
        connect_ok(answer, json::object{{"events", std::move(events)}});
      },
      fail);
}

} // namespace allox::e2b
