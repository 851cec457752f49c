// SPDX-License-Identifier: Apache-2.0
// GET /v1/stream?agent_id=&session_id=&run_id= (docs/rpc.md, "Live
// stream"): the native front's live answer, a run's output and state as
// Server-Sent Events, event-driven end to end, on the loop thread:
//   open:   the head goes out, then the subscription: RPC -> SESSION
//           registers the feed's sink and answers {row, dir}
//   output: the feed reads the run's logs itself at its offsets when
//           inotify says the run directory changed (a slow timer only as
//           a fallback), and holds back while the client is behind (the
//           transport says when it drained)
//   state:  the session pushes the run's row on every state change; the
//           row hops to the loop thread (server::run_on_loop)
//   end:    once the session reports the run ended (its cgroup empty) and
//           both logs are read to their end; or, when the daemon stops,
//           with {"reason":"daemon_shutdown"}
//   events: a tracked run's process events, read the same way from its
//           events.jsonl (the session appends each batch from the
//           TRACKER before it ends the run, so `end` follows them all)
// Events: `stdout`/`stderr` {offset, data}, `process` {seq, event, pid,
// ...} (a line of events.jsonl), `state` {state}, `end` {state}; every
// output event carries `id: <stdout offset>-<stderr offset>` (and
// `-<events offset>` for a tracked run), which a client reconnecting with
// Last-Event-ID resumes from. A comment line every heartbeat interval
// keeps idle streams alive through proxies.
#include "fronts/native/front.hpp"

#include "guest/http/server.hpp"
#include "guest/os/unique_fd.hpp"
#include "messages/results/runs_json.hpp"
#include "messages/rpc.hpp"
#include "messages/utf8.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

namespace allox::native {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr const char* log_names[3] = {"stdout", "stderr", "process"};
constexpr const char* log_files[3] = {"stdout.log", "stderr.log",
                                      "events.jsonl"};
constexpr int events_log = 2;

/// Bytes read from a log per event.
constexpr size_t chunk_size = 64 << 10;

/// Parses "<stdout offset>-<stderr offset>[-<events offset>]"; false
/// when malformed.
bool parse_event_id(std::string_view text, int64_t (&offsets)[3]) {
  std::string s{text};
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

/// One client's stream of one run, on the loop thread from the route's
/// head until the transport says the answer is gone (and its handles are
/// closed).
class run_feed : public std::enable_shared_from_this<run_feed> {
public:
  run_feed(http::server& srv, stream_options opts, const int64_t (&offsets)[3])
      : srv_(srv), opts_(opts) {
    std::copy(std::begin(offsets), std::end(offsets), offsets_);
  }

  /// The head is out as `out`: subscribes to the run.
  void subscribe(http::live_answer out, const rpc_getter& rpc,
                 json::object params);

  /// The run's row, first from the subscription, then pushed by the
  /// session: a state event when the state changed; a final state ends
  /// the stream once the logs are read to their end.
  void apply_row(const run_row& row);

  /// Sends what the logs (and the events) gained since the offsets,
  /// unless the client is behind; ends the stream when the run has ended
  /// and everything is read.
  void read_output();

  /// A row the session pushed: taken once the subscription's answer is.
  void on_push(const run_row& row) {
    if (!subscribed_)
      return;
    apply_row(row);
    read_output();
  }

  /// The daemon stops: ends the stream with a reason.
  void stopping() {
    if (!done_)
      end(R"({"reason":"daemon_shutdown"})");
  }

  /// The answer is over: nothing more is read or sent.
  void gone();

private:
  class sink;
  void on_subscribed(const rpc_reply& reply);
  void send(std::string event) {
    // Refused once the connection is closing: nothing more is read.
    if (!out_.send(std::move(event)))
      done_ = true;
    last_sent_ = clock_type::now();
  }
  void end(const std::string& data);
  /// `id: ...` of the stream's position.
  std::string event_id() const;
  static void on_log_changed(uv_fs_event_t* h, const char*, int, int);
  static void on_timer(uv_timer_t* t);
  static void on_closed(uv_handle_t* h);

  http::server& srv_;
  stream_options opts_;
  http::live_answer out_;
  std::shared_ptr<sink> sink_;
  /// The subscription's ticket while it is awaited (0: none).
  uint64_t awaiting_ = 0;
  bool done_ = false;
  /// The session answered the subscription (the logs are known).
  bool subscribed_ = false;
  std::string log_dir_;
  /// stdout.log, stderr.log and, for a tracked run, events.jsonl.
  os::unique_fd logs_[3];
  /// Bytes of each sent so far (resumable: Last-Event-ID).
  int64_t offsets_[3] = {0, 0, 0};
  /// The run's process events are streamed too (its row says ebpf).
  bool tracked_ = false;
  /// The run has ended: the stream ends once the logs are read.
  bool run_ended_ = false;
  std::string last_state_;
  clock_type::time_point last_sent_ = clock_type::now();
  /// inotify on the run directory: the logs grew.
  uv_fs_event_t watch_{};
  /// The fallback read and the heartbeat.
  uv_timer_t timer_{};
  /// Initialized, so closed when the feed is gone.
  bool watch_open_ = false;
  bool timer_open_ = false;
  /// Handles still closing, and the feed kept alive until they are.
  int closing_ = 0;
  std::shared_ptr<run_feed> keep_;
};

/// Where the session pushes the run's row, from its actor thread; false
/// once the feed is gone (the session then forgets it).
class run_feed::sink final : public run_sink {
public:
  sink(http::server& srv, std::weak_ptr<run_feed> feed)
      : srv_(srv), feed_(std::move(feed)) {}

  bool push(const run_row& row) override {
    if (!open_.load(std::memory_order_relaxed))
      return false;
    srv_.run_on_loop([feed = feed_, row] {
      if (auto f = feed.lock())
        f->on_push(row);
    });
    return true;
  }

  void close() { open_.store(false, std::memory_order_relaxed); }

private:
  http::server& srv_;
  std::weak_ptr<run_feed> feed_;
  std::atomic<bool> open_{true};
};

void run_feed::subscribe(http::live_answer out, const rpc_getter& rpc,
                         json::object params) {
  if (done_)
    return; // gone before its head went out
  out_ = out;
  sink_ = std::make_shared<sink>(srv_, weak_from_this());
  auto awaited =
      srv_.await(nullptr, [feed = weak_from_this()](rpc_reply reply) {
        if (auto f = feed.lock())
          f->on_subscribed(reply);
      });
  awaiting_ = awaited.ticket;
  native::subscribe(rpc, stream_request{json::value(std::move(params)), sink_,
                                        std::move(awaited.reply)});
}

void run_feed::on_subscribed(const rpc_reply& reply) {
  awaiting_ = 0;
  if (done_)
    return;
  boost::system::error_code ec;
  auto doc = json::parse(reply.body, ec);
  const json::object* result = nullptr;
  if (reply.status == 200 && !ec && doc.is_object())
    if (auto* r = doc.as_object().if_contains("result"); r && r->is_object())
      result = &r->as_object();
  const json::value* row = result ? result->if_contains("row") : nullptr;
  const json::value* dir = result ? result->if_contains("dir") : nullptr;
  expected<run_row> decoded = make_error(errc::internal, "no row");
  if (row != nullptr && row->is_object())
    decoded = run_row_from_json(row->as_object());
  if (!decoded || dir == nullptr || !dir->is_string()) {
    done_ = true;
    out_.send("event: error\ndata: " + reply.body + "\n\n", true);
    return;
  }
  subscribed_ = true;
  log_dir_ = std::string{dir->get_string()};
  uv_fs_event_init(srv_.loop(), &watch_);
  watch_.data = this;
  watch_open_ = true;
  // Without inotify the fallback timer still reads the logs.
  uv_fs_event_start(&watch_, on_log_changed, log_dir_.c_str(), 0);
  apply_row(*decoded);
  read_output();
  if (done_)
    return;
  uv_timer_init(srv_.loop(), &timer_);
  timer_.data = this;
  timer_open_ = true;
  auto every = std::min(opts_.fallback_ms, opts_.heartbeat_ms);
  uv_timer_start(&timer_, on_timer, every, every);
}

void run_feed::apply_row(const run_row& row) {
  if (done_)
    return;
  tracked_ = tracked_ || row.backend == "ebpf";
  std::string state{to_string(row.state)};
  if (state != last_state_) {
    last_state_ = state;
    send("event: state\ndata: " +
         json::serialize(json::object{{"state", state}}) + "\n\n");
  }
  run_ended_ = run_ended_ || is_final(row.state);
}

void run_feed::read_output() {
  if (done_ || !subscribed_)
    return;
  bool at_end[3] = {false, false, !tracked_};
  std::string buf(chunk_size, '\0');
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
    for (;;) {
      // Back-pressure: a client that does not keep up gets nothing more
      // until its queue drains (the transport calls `drained`).
      if (done_ || out_.behind())
        return;
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
               event_id() + "\n\n");
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
               json::serialize(payload) + "\n" + event_id() + "\n\n");
        }
      }
      if (whole == 0 || whole < chunk.size())
        break;
    }
  }
  if (run_ended_ && at_end[0] && at_end[1] && at_end[2])
    end(json::serialize(json::object{{"state", last_state_}}));
}

std::string run_feed::event_id() const {
  auto id =
      "id: " + std::to_string(offsets_[0]) + "-" + std::to_string(offsets_[1]);
  if (tracked_)
    id += "-" + std::to_string(offsets_[2]);
  return id;
}

void run_feed::end(const std::string& data) {
  done_ = true;
  // The last part: the transport then says the answer is gone.
  out_.send("event: end\ndata: " + data + "\n\n", true);
}

void run_feed::gone() {
  done_ = true;
  if (sink_)
    sink_->close();
  if (awaiting_ != 0)
    srv_.cancel(std::exchange(awaiting_, 0));
  // Kept alive until libuv is done with the handles.
  auto close = [this](auto& handle, bool& open) {
    if (!std::exchange(open, false))
      return;
    ++closing_;
    uv_close(reinterpret_cast<uv_handle_t*>(&handle), on_closed);
  };
  close(watch_, watch_open_);
  close(timer_, timer_open_);
  if (closing_ > 0)
    keep_ = shared_from_this();
}

void run_feed::on_closed(uv_handle_t* h) {
  auto* self = static_cast<run_feed*>(h->data);
  if (--self->closing_ == 0)
    self->keep_.reset(); // may be the last reference
}

void run_feed::on_log_changed(uv_fs_event_t* h, const char*, int, int) {
  static_cast<run_feed*>(h->data)->read_output();
}

// The fallback for a missed inotify event, and the heartbeat.
void run_feed::on_timer(uv_timer_t* t) {
  auto* self = static_cast<run_feed*>(t->data);
  self->read_output();
  if (self->done_)
    return;
  if (clock_type::now() - self->last_sent_ >=
      std::chrono::milliseconds{self->opts_.heartbeat_ms})
    self->send(": heartbeat\n\n");
}

/// A refusal before the stream began: 400, and the connection closes, as
/// the prototype's.
http::route_response refusal(std::string_view message) {
  auto r = json_answer(400, error_body(message, "invalid_argument"));
  r.close = true;
  r.counted_as = http::route_response::tally::none;
  return r;
}

void serve_stream(http::server& srv, const rpc_getter& rpc, stream_options opts,
                  const http::route_request& req, http::responder answer) {
  auto url = boost::urls::parse_origin_form(
      std::string_view{req.target().data(), req.target().size()});
  if (!url) {
    // A target Beast takes and the URL grammar does not (`?x=%zz`): no
    // stream's, as before.
    auto r = json_answer(404, error_body("not found", "not_found"));
    r.counted_as = http::route_response::tally::none;
    return answer(std::move(r));
  }
  auto params = url->params();
  auto get = [&](const char* key) {
    auto it = params.find(key);
    return it == params.end() ? std::string{} : std::string{(*it).value};
  };
  json::object query{{"agent_id", get("agent_id")},
                     {"session_id", get("session_id")},
                     {"run_id", get("run_id")}};
  for (const auto& kv : query)
    if (kv.value().as_string().empty())
      return answer(refusal("stream requires agent_id, session_id and run_id"));
  int64_t offsets[3] = {0, 0, 0};
  if (auto last = req.find("Last-Event-ID");
      last != req.end() && !last->value().empty() &&
      !parse_event_id({last->value().data(), last->value().size()}, offsets))
    return answer(refusal("Last-Event-ID must be <stdout offset>-<stderr "
                          "offset>[-<events offset>]"));
  auto feed = std::make_shared<run_feed>(srv, opts, offsets);
  http::route_response head;
  head.content_type = "text/event-stream";
  head.streaming = true;
  head.chunked = false; // the events frame themselves
  head.counted_as = http::route_response::tally::none;
  http::live_hooks hooks;
  hooks.drained = [feed] {
    feed->read_output();
  };
  hooks.stopping = [feed] {
    feed->stopping();
  };
  hooks.gone = [feed] {
    feed->gone();
  };
  auto out = answer.live(std::move(head), std::move(hooks));
  feed->subscribe(out, rpc, std::move(query));
}

} // namespace

void serve_live_stream(http::server& srv, rpc_getter rpc, stream_options opts) {
  http::route r;
  r.method = boost::beast::http::verb::get;
  r.path = "/v1/stream";
  r.match = http::route_match::exact;
  // The RPC's token rule.
  r.access = http::route_access::token;
  r.serve = [&srv, rpc = std::move(rpc), opts](const http::route_request& req,
                                               http::responder answer) {
    serve_stream(srv, rpc, opts, req, std::move(answer));
  };
  srv.add_route(std::move(r));
}

} // namespace allox::native
