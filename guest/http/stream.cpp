// SPDX-License-Identifier: Apache-2.0
// The live stream of a run: GET /v1/stream?agent_id=&session_id=&run_id=
//
// Server-Sent Events, event-driven end to end:
//   open:   subscribe once (RPC -> SESSION registers the stream's sink and
//           answers {row, dir})
//   output: the loop reads the run's logs itself at the stream's offsets
//           when inotify says the run directory changed (a slow timer only
//           as a fallback), and stops while the client is behind
//   state:  the session pushes the run's row on every state change
//   end:    once the session reports the run ended (its cgroup empty) and
//           both logs are read to their end
//   events: a tracked run's process events, read the same way from its
//           events.jsonl (the session appends each batch from the
//           TRACKER before it ends the run, so `end` follows them all)
// Events: `stdout`/`stderr` {offset, data}, `process` {seq, event, pid,
// ...} (a line of events.jsonl), `state` {state}, `end` {state}; every
// output event carries `id: <stdout offset>-<stderr offset>` (and
// `-<events offset>` for a tracked run), which a client reconnecting with
// Last-Event-ID resumes from. A comment line every heartbeat interval
// keeps idle streams alive through proxies.
#include "guest/http/connection.hpp"
#include "guest/http/server.hpp"
#include "guest/http/stream_sink.hpp"
#include "guest/http/wire.hpp"
#include "messages/results/runs_json.hpp"
#include "messages/utf8.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace allox::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {

constexpr const char* log_names[3] = {"stdout", "stderr", "process"};
constexpr const char* log_files[3] = {"stdout.log", "stderr.log",
                                      "events.jsonl"};
constexpr int events_log = 2;

/// Bytes read from a log per event.
constexpr size_t chunk_size = 64 << 10;

/// Parses "<stdout offset>-<stderr offset>[-<events offset>]"; false
/// when malformed.
bool parse_event_id(beast::string_view text, int64_t (&offsets)[3]) {
  std::string s{text.data(), text.size()};
  long long out = 0;
  long long err = 0;
  long long events = 0;
  char tail = 0;
  auto n =
      std::sscanf(s.c_str(), "%lld-%lld-%lld%c", &out, &err, &events, &tail);
  if (n == 2 && s.find('-') != s.rfind('-'))
    return false; // "1-2-" and the like
  if ((n != 2 && n != 3) || out < 0 || err < 0 || events < 0)
    return false;
  offsets[0] = out;
  offsets[1] = err;
  offsets[2] = events;
  return true;
}

/// The end of the last whole line of `chunk` (0: none): events go out a
/// line each, never cut.
size_t whole_lines(std::string_view chunk) {
  auto nl = chunk.rfind('\n');
  return nl == std::string_view::npos ? 0 : nl + 1;
}

bool final_state(const std::string& state) {
  return state != "starting" && state != "running";
}

} // namespace

bool stream_sink::push(const run_row& row) {
  if (!open_)
    return false;
  srv_->push_stream(stream_, json::serialize(to_json(row)));
  return true;
}

void connection::start_stream(beast::string_view target,
                              beast::string_view last_event_id) {
  auto url = boost::urls::parse_origin_form(
      std::string_view{target.data(), target.size()});
  auto params = url->params();
  auto get = [&](const char* key) {
    auto it = params.find(key);
    return it == params.end() ? std::string{} : std::string{(*it).value};
  };
  json::object query{{"agent_id", get("agent_id")},
                     {"session_id", get("session_id")},
                     {"run_id", get("run_id")}};
  for (const auto& kv : query)
    if (kv.value().as_string().empty()) {
      respond(400,
              error_body("stream requires agent_id, session_id and run_id",
                         "invalid_argument"),
              true);
      return;
    }
  if (!last_event_id.empty() && !parse_event_id(last_event_id, offsets_)) {
    respond(400,
            error_body("Last-Event-ID must be <stdout offset>-<stderr "
                       "offset>[-<events offset>]",
                       "invalid_argument"),
            true);
    return;
  }
  streaming_ = true;
  keep_alive_ = false;
  bhttp::response<bhttp::empty_body> res{bhttp::status::ok, 11};
  res.set(bhttp::field::content_type, "text/event-stream");
  res.set(bhttp::field::cache_control, "no-cache");
  res.set(bhttp::field::server, "allox-workspace-daemon");
  res.keep_alive(false);
  send(serialize(res, true), false);
  last_sent_ = clock_type::now();
  stream_id_ = srv_->next_stream_id();
  sink_ = std::make_shared<stream_sink>(srv_, stream_id_);
  waiting_ = true;
  srv_->open_stream(this, stream_id_, std::move(query), sink_);
}

void connection::on_stream_reply(int status, const std::string& body) {
  boost::system::error_code ec;
  auto doc = json::parse(body, ec);
  const json::object* result = nullptr;
  if (status == 200 && !ec && doc.is_object())
    if (auto* r = doc.as_object().if_contains("result"); r && r->is_object())
      result = &r->as_object();
  if (result == nullptr || !result->contains("row") ||
      !result->contains("dir")) {
    send("event: error\ndata: " + body + "\n\n", true);
    return;
  }
  subscribed_ = true;
  log_dir_ = std::string{result->at("dir").as_string()};
  uv_fs_event_init(tcp_.loop, &watch_);
  watch_.data = this;
  watching_ =
      uv_fs_event_start(&watch_, on_log_changed, log_dir_.c_str(), 0) == 0;
  if (!watching_)
    uv_close(reinterpret_cast<uv_handle_t*>(&watch_), nullptr);
  apply_row(result->at("row").as_object());
  read_output();
  if (!closing_) {
    const auto& o = srv_->options();
    auto every = std::min(o.stream_fallback_ms, o.stream_heartbeat_ms);
    uv_timer_start(&timer_, on_stream_timer, every, every);
  }
}

void connection::on_stream_push(const std::string& row_json) {
  if (closing_ || !subscribed_)
    return;
  boost::system::error_code ec;
  auto doc = json::parse(row_json, ec);
  if (ec || !doc.is_object())
    return;
  apply_row(doc.as_object());
  read_output();
}

void connection::apply_row(const json::object& row) {
  if (auto* backend = row.if_contains("backend"))
    tracked_ = tracked_ || *backend == "ebpf";
  auto* state = row.if_contains("state");
  if (state == nullptr || !state->is_string())
    return;
  std::string text{state->get_string()};
  if (text != last_state_) {
    last_state_ = text;
    send("event: state\ndata: " +
             json::serialize(json::object{{"state", text}}) + "\n\n",
         false);
    last_sent_ = clock_type::now();
  }
  run_ended_ = run_ended_ || final_state(text);
}

void connection::read_output() {
  if (closing_ || !subscribed_)
    return;
  bool at_end[3] = {false, false, !tracked_};
  for (int i = 0; i < 3; ++i) {
    if (at_end[i])
      continue;
    if (!logs_[i]) {
      auto path = log_dir_ + "/" + log_files[i];
      logs_[i].reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!logs_[i]) {
        at_end[i] = true; // a run that never opened its logs, no events yet
        continue;
      }
    }
    std::string buf(chunk_size, '\0');
    for (;;) {
      // Back-pressure: a client that does not keep up gets nothing more
      // until its queue drains (on_written resumes).
      if (uv_stream_get_write_queue_size(stream()) > max_stream_queue) {
        stream_paused_ = true;
        return;
      }
      auto n = ::pread(logs_[i].get(), buf.data(), buf.size(), offsets_[i]);
      if (n <= 0) {
        at_end[i] = true;
        break;
      }
      std::string_view chunk{buf.data(), static_cast<size_t>(n)};
      size_t whole = 0;
      if (i == events_log) {
        whole = whole_lines(chunk);
        for (size_t at = 0; at < whole;) {
          auto nl = chunk.find('\n', at);
          offsets_[i] += static_cast<int64_t>(nl + 1 - at);
          send(std::string{"event: "} + log_names[i] +
                   "\ndata: " + std::string{chunk.substr(at, nl - at)} + "\n" +
                   event_id() + "\n\n",
               false);
          at = nl + 1;
        }
      } else {
        // Never split a character between two events, unless the run has
        // ended and nothing more will come.
        whole = run_ended_ ? chunk.size() : whole_utf8_prefix(chunk);
        if (whole > 0) {
          json::object payload{{"offset", offsets_[i]},
                               {"data", valid_utf8(chunk.substr(0, whole))}};
          offsets_[i] += static_cast<int64_t>(whole);
          send(std::string{"event: "} + log_names[i] + "\ndata: " +
                   json::serialize(payload) + "\n" + event_id() + "\n\n",
               false);
        }
      }
      if (whole == 0)
        break;
      last_sent_ = clock_type::now();
      if (whole < chunk.size())
        break;
    }
  }
  stream_paused_ = false;
  if (run_ended_ && at_end[0] && at_end[1] && at_end[2])
    end_stream(json::serialize(json::object{{"state", last_state_}}));
}

std::string connection::event_id() const {
  auto id =
      "id: " + std::to_string(offsets_[0]) + "-" + std::to_string(offsets_[1]);
  if (tracked_)
    id += "-" + std::to_string(offsets_[2]);
  return id;
}

void connection::end_stream(const std::string& data) {
  uv_timer_stop(&timer_);
  send("event: end\ndata: " + data + "\n\n", true);
  streaming_ = false;
  subscribed_ = false;
}

void connection::end_stream_for_shutdown() {
  if (!streaming_ || closing_)
    return;
  end_stream(R"({"reason":"daemon_shutdown"})");
}

void connection::on_log_changed(uv_fs_event_t* h, const char*, int, int) {
  static_cast<connection*>(h->data)->read_output();
}

// The fallback for a missed inotify event, and the heartbeat.
void connection::on_stream_timer(uv_timer_t* t) {
  auto* self = static_cast<connection*>(t->data);
  self->read_output();
  if (self->closing_ || !self->streaming_)
    return;
  auto idle = clock_type::now() - self->last_sent_;
  if (idle >=
      std::chrono::milliseconds{self->srv_->options().stream_heartbeat_ms}) {
    self->send(": heartbeat\n\n", false);
    self->last_sent_ = clock_type::now();
  }
}

} // namespace allox::http
