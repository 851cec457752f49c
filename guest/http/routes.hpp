// SPDX-License-Identifier: Apache-2.0
// Routes a front registers on the server (guest/http/server.hpp): the
// transport parses, bounds and authorizes a request, then hands it whole to
// the route that serves its path; the front answers once, from the loop or
// from any actor thread. The transport knows no front's wire.
//
// A streamed route is served on its head alone: its front answers (a
// refusal) or hands back a transfer_plan, and the transport then moves the
// body to, or the answer from, a session's workspace through the bulk
// transfer path (transfer.cpp), never holding it whole in memory. The
// native PUT/GET /v1/files/ are such routes too (fronts/native).
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace allox::http {

class server;

/// A routed request, head and body (the body within max_body).
using route_request =
    boost::beast::http::request<boost::beast::http::string_body>;

/// What a front answers.
struct route_response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  /// More header fields, in order (Content-Type and Server are set).
  std::vector<std::pair<std::string, std::string>> headers;
  /// A streamed answer: the head and `body` go out now, more bytes follow
  /// through responder::more() until its last part, and the connection
  /// closes after it (the body ends with the connection, as HTTP/1.1
  /// allows without a length).
  bool streaming = false;
  /// A streamed answer without a Content-Length is chunked, so that a
  /// client can tell a complete body from a cut one; false: the body ends
  /// with the connection alone, for a format that frames its own events
  /// (Server-Sent Events).
  bool chunked = true;
  /// The connection closes after this answer (a whole one).
  bool close = false;
  /// How the transport's request metrics count the request: under the
  /// action it reached (`action`; empty: the route's path), as refused
  /// before it reached one, or not at all (a scrape of those metrics).
  enum class tally { action, rejected, none };
  tally counted_as = tally::action;
  std::string action = {};
};

/// What a front decided for a streamed route's request: the bytes of one
/// session's files, and how they are coded on the wire.
struct transfer_plan {
  std::string agent_id;
  std::string session_id;
  /// Named in the audit and in the write provenance (the front's name).
  std::string origin;
  bool upload = false;
  /// As file.* take paths: the file; for a form upload, the directory its
  /// parts' paths are beneath ("": the workspace).
  std::string path;
  /// An upload whose body is multipart/form-data with this boundary, one
  /// file per part (empty: the body is the file's bytes).
  std::string form_boundary;
  /// A part's filename as a path beneath `path`; an error refuses the
  /// upload (what was written of it stays, each file whole).
  std::function<expected<std::string>(std::string_view filename)> part_path;
  /// The upload's body is gzip: inflated as it comes, within the limit.
  bool gunzip = false;
  /// The download is deflated as it goes (Content-Encoding: gzip).
  bool gzip = false;
  /// Missing parent directories of an uploaded file are made.
  bool make_parents = false;
  /// The upload's body is a tar stream, unpacked beneath `path`.
  bool tar = false;
  /// A directory downloads as a tar stream (else it is refused: a plan
  /// moves regular files only).
  bool directories = false;
  /// An upload's result, and its audit, name the files written
  /// ({files: [{path, size}]}); else the result is the file's alone.
  bool name_files = true;
  /// The request metrics count the transfer as its route's request, with
  /// 200, once it begins (the native transfers are not counted there:
  /// their audit records each).
  bool counted = true;
  /// An upload's answer, given its result (with name_files,
  /// {files: [{path, size}]}, paths beneath the workspace). A download's
  /// answer is the file.
  std::function<route_response(const json::object& result)> done;
  /// The answer to an error, in the front's shape (a directory asked for
  /// without `directories` is invalid_argument).
  std::function<route_response(const caf::error& err)> failed;
};

/// What the transport tells a front feeding a live answer
/// (responder::live) about its client. Each runs on the loop thread.
struct live_hooks {
  /// The client took what was queued, after live_answer::behind() said
  /// it was behind.
  std::function<void()> drained;
  /// The daemon stops serving: the front's last words (a send with
  /// `last`). Without it the answer is cut off.
  std::function<void()> stopping;
  /// The answer is over: its last part went out, its client went away or
  /// the server closed. Called once, and nothing after it.
  std::function<void()> gone;
};

/// A streamed answer its front feeds from the loop thread, from sources
/// it watches there itself (a run's logs). Loop thread only; copies name
/// the same answer.
class live_answer {
public:
  live_answer() = default;
  live_answer(server* srv, uint64_t ticket) : srv_(srv), ticket_(ticket) {}

  /// Queues `data` for the client now; `last` ends the answer (the
  /// connection closes once it is written). False once the answer is
  /// over.
  bool send(std::string data, bool last = false) const;

  /// More than the transport's mark waits to reach the client: the front
  /// holds back until `drained`.
  bool behind() const;

private:
  server* srv_ = nullptr;
  uint64_t ticket_ = 0;
};

/// Answers one routed request. Thread-safe; the first answer counts, and
/// one given after its connection went away (or the server closed) is
/// dropped.
class responder {
public:
  responder(server* srv, uint64_t ticket,
            std::shared_ptr<const std::atomic<bool>> open)
      : srv_(srv), ticket_(ticket), open_(std::move(open)) {}
  void operator()(route_response response) const;

  /// More of a streamed answer; `last` ends it. Dropped once the client
  /// went away.
  void more(std::string data, bool last = false) const;

  /// Loop thread only (within the route's serve, or later on the loop):
  /// the streamed answer's head goes out now, and the front feeds its
  /// body through the returned handle, told of its client by `hooks`.
  live_answer live(route_response head, live_hooks hooks) const;

  /// A streamed route's request goes ahead as `plan` says (instead of an
  /// answer).
  void begin(transfer_plan plan) const;

  /// A host route's request (server::set_host_route) is tunnelled to
  /// `socket` (connected, non-blocking; taken over), instead of an answer.
  void tunnel(int socket) const;

  /// False once the answer is complete or its client went away: a front
  /// feeding a stream stops then.
  bool open() const { return open_->load(std::memory_order_relaxed); }

private:
  server* srv_;
  uint64_t ticket_;
  std::shared_ptr<const std::atomic<bool>> open_;
};

/// Serves a request on the loop thread; answers through the responder,
/// at once or later.
using route_fn = std::function<void(const route_request&, responder)>;

/// Who may call a route: anyone (a page of code, a probe) or only bearers
/// of the daemon's token, as the native RPC.
enum class route_access { open, token };

/// Whether a route serves its path alone or everything under it.
enum class route_match { exact, prefix };

struct route {
  boost::beast::http::verb method;
  std::string path;
  route_match match;
  route_access access;
  route_fn serve;
  /// The largest body the route takes (0: the server's max_body); held in
  /// memory whole, so only routes that need more say so.
  size_t max_body = 0;
  /// Served on its head: the front answers, or begins a transfer_plan
  /// (the body is then streamed, within the upload limits).
  bool streamed = false;
  /// Only a body of declared, non-zero length is taken: an empty or a
  /// chunked one is refused as too large.
  bool length_required = false;
  /// An exact route serving its path only without a query (a target with
  /// one is no route's).
  bool bare = false;
  /// The answer to a body over the limit (and to one length_required
  /// refuses); none: 413, naming the limit.
  std::function<route_response()> too_large = {};
};

/// The route serving `method` on `target` (the query ignored, unless the
/// route is `bare`): an exact path before the longest prefix; null when
/// none does.
const route* find_route(const std::vector<route>& routes,
                        boost::beast::http::verb method,
                        std::string_view target);

} // namespace allox::http
