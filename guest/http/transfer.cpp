// SPDX-License-Identifier: Apache-2.0
// Bulk file transfers: PUT and GET /v1/files/{agent}/{session}/{path}
// (docs/rpc.md, "Bulk file transfer").
//
//   head:    token, target, Content-Length against --max-upload-bytes and
//            the session's uploads in flight against
//            --max-session-upload-bytes (413 at once)
//   begin:   RPC -> SESSION: may it (no upload while mutating), where is
//            it ({root, rel, path}); then `100 Continue` if asked
//   bytes:   a worker thread of its own runs the file job; the body goes
//            to it chunk by chunk (reading stops while its queue is full),
//            a download comes from it the same way (taken while the
//            socket's write queue is short). A body of declared length is
//            read from the socket straight into the worker's buffers.
//   end:     RPC -> SESSION: audit (file.upload / file.download, bytes);
//            then the upload's reply, and the next request
// A failure on the loop side (limit, malformed body) cancels the worker
// and is answered once it has removed what it wrote.
#include "guest/http/transfer.hpp"
#include "guest/store/upload_marks.hpp"

#include "guest/http/connection.hpp"
#include "guest/http/server.hpp"
#include "guest/http/wire.hpp"
#include "guest/os/workspace_tar.hpp"
#include "messages/rpc.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <fcntl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

namespace allox::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

// -- the connection's side ----------------------------------------------------

namespace {

/// The status of a transfer's error: 413 for limits, else as in RPC.
int status_of(errc code) {
  return code == errc::payload_too_large ? 413 : http_status(code);
}

std::pair<int, std::string> failure_of(const caf::error& err) {
  auto code = code_of(err);
  return {status_of(code), error_body(message_of(err), code_name(code))};
}

/// Runs the file job on a thread of its own; it reports through `ch`.
/// `marks` is where an upload records itself for start-up to clean up
/// after a crash (guest/store/upload_marks.hpp).
void run_job(std::shared_ptr<transfer_channel> ch, bool upload, bool tar,
             std::string root_dir, std::string rel, uint64_t max_bytes,
             std::string marks, bool shared) {
  std::thread{[ch = std::move(ch), upload, tar, root_dir = std::move(root_dir),
               rel = std::move(rel), max_bytes, marks = std::move(marks),
               shared] {
    auto job = [&]() -> expected<json::object> {
      auto root = os::workspace_root::open(root_dir);
      if (!root)
        return root.error();
      os::tar_limits limits;
      limits.max_bytes = max_bytes;
      auto pull = [&ch](std::string_view& c) {
        return ch->pull(c);
      };
      auto push = [&ch](std::string c) {
        return ch->push(std::move(c));
      };
      if (upload) {
        auto mark = store::mark_upload(marks, shared, rel);
        if (!mark)
          return mark.error();
        auto r = tar ? os::receive_tar(*root, rel, pull, limits)
                     : os::receive_file(*root, rel, pull);
        store::unmark_upload(*mark);
        return r;
      }
      auto src = os::open_download(*root, rel);
      if (!src) {
        ch->opened(src.error());
        return src.error();
      }
      ch->opened(json::object{{"directory", src->directory},
                              {"size", static_cast<int64_t>(src->size)}});
      if (src->directory)
        return os::send_tar(src->fd.get(), push, limits.max_depth);
      // A regular file goes from the page cache to the socket: the loop
      // hands it over once the head may go.
      auto out = ch->await_socket();
      if (!out)
        return make_error(errc::invalid_argument, "the client went away");
      auto err = os::send_file(
          src->fd.get(), src->size, out->socket.get(), out->head,
          [&ch] { return !ch->cancelled(); }, [&ch] { ch->moved(); });
      if (err)
        return err;
      return json::object{{"size", static_cast<int64_t>(src->size)}};
    };
    try {
      ch->finish(job());
    } catch (const std::exception& e) {
      ch->finish(make_error(errc::internal, e.what()));
    }
  }}.detach();
}

} // namespace

bool connection::is_transfer(beast::string_view target) {
  return target.starts_with("/v1/files/");
}

void connection::start_transfer() {
  const auto& req = parser_->get();
  const auto& o = srv_->options();
  auto url = boost::urls::parse_origin_form(
      std::string_view{req.target().data(), req.target().size()});
  std::vector<std::string> segs;
  if (url)
    for (auto s : url->segments())
      segs.push_back(s);
  if (segs.size() < 4) {
    reject(400, "target must be /v1/files/{agent}/{session}/{path}",
           "invalid_argument");
    return;
  }
  auto b = std::make_unique<bulk_transfer>();
  b->upload = req.method() == bhttp::verb::put;
  b->agent_id = segs[2];
  b->session_id = segs[3];
  for (size_t i = 4; i < segs.size(); ++i)
    b->path += (i > 4 ? "/" : "") + segs[i];
  b->session_key = b->agent_id + "/" + b->session_id;
  if (!b->upload) {
    if (parser_->content_length().value_or(0) > 0 || parser_->chunked()) {
      reject(400, "a download takes no request body", "invalid_argument");
      return;
    }
  } else {
    auto type = req[bhttp::field::content_type];
    b->tar = type.starts_with("application/x-tar");
    auto expect = req[bhttp::field::expect];
    b->expect_continue = beast::iequals(expect, "100-continue");
    auto length = parser_->content_length();
    if (length && *length > o.max_upload) {
      reject(413,
             "upload larger than the limit of " + std::to_string(o.max_upload) +
                 " bytes",
             "payload_too_large");
      return;
    }
    // A declared length counts in full at once; a chunked body as it comes.
    if (length) {
      if (!srv_->charge_upload(b->session_key, *length)) {
        reject(413,
               "the session's uploads in flight would pass the limit of " +
                   std::to_string(o.max_session_upload) + " bytes",
               "payload_too_large");
        return;
      }
      b->charged = *length;
    }
    b->body.emplace(std::move(*parser_));
    b->body->body_limit(o.max_upload);
  }
  bulk_ = std::move(b);
  srv_->transfer(this,
                 json::object{{"agent_id", bulk_->agent_id},
                              {"session_id", bulk_->session_id},
                              {"path", bulk_->path},
                              {"upload", bulk_->upload},
                              {"tar", bulk_->tar}},
                 false);
}

void connection::on_transfer_reply(int status, const std::string& body) {
  if (closing_)
    return;
  auto& b = *bulk_;
  if (b.step == bulk_transfer::phase::ending) {
    if (b.upload)
      respond(status, status == 200 ? ok_body(json::serialize(b.result)) : body,
              !keep_alive_);
    end_transfer();
    return;
  }
  boost::system::error_code ec;
  auto doc = json::parse(body, ec);
  const json::object* where = nullptr;
  if (status == 200 && !ec && doc.is_object())
    if (auto* r = doc.as_object().if_contains("result"); r && r->is_object())
      where = &r->as_object();
  if (where == nullptr) {
    // The body (if any) was never read: close after answering.
    respond(status, body, b.upload || !keep_alive_);
    end_transfer();
    return;
  }
  b.step = bulk_transfer::phase::running;
  if (b.upload)
    if (auto length = b.body->content_length())
      b.remaining = *length;
  b.result = json::object{{"path", where->at("path")}};
  if (auto* e = where->if_contains("epoch"); e && e->is_int64())
    b.epoch = e->get_int64();
  b.channel = transfer_channel::open(tcp_.loop, [this] { on_transfer_wake(); });
  run_job(b.channel, b.upload, b.tar,
          std::string{where->at("root").as_string()},
          std::string{where->at("rel").as_string()}, srv_->options().max_upload,
          std::string{where->at("uploads_dir").as_string()},
          where->at("shared").as_bool());
  if (b.upload && b.expect_continue)
    send("HTTP/1.1 100 Continue\r\n\r\n", false);
  if (b.upload)
    feed_upload();
  update_reading();
}

bool connection::transfer_wants_input() const {
  const auto& b = *bulk_;
  if (b.upload && b.step == bulk_transfer::phase::running)
    return !b.failure && !b.body_done && !b.channel->full();
  return pending_input() < pause_input;
}

void connection::feed_upload() {
  auto& b = *bulk_;
  if (b.step != bulk_transfer::phase::running || b.failure || b.body_done)
    return;
  if (b.remaining) {
    // A declared length: the body bytes read with the head (or before the
    // worker started) are copied out once; later ones are read in place.
    while (*b.remaining > 0 && !b.channel->full() && pending_input() > 0) {
      if (b.lent.empty())
        b.lent = b.channel->reuse();
      auto n = static_cast<size_t>(std::min<uint64_t>(
          {pending_input(), b.lent.size() - b.filled, *b.remaining}));
      std::memcpy(b.lent.data() + b.filled, input_.data() + consumed_, n);
      consumed_ += n;
      received(n);
    }
    if (*b.remaining == 0)
      end_of_body();
    compact_input();
    return;
  }
  // Chunked: the parser takes the framing off.
  auto& p = *b.body;
  while (!p.is_done() && !b.channel->full() && pending_input() > 0) {
    if (b.lent.empty())
      b.lent = b.channel->reuse();
    auto room = b.lent.size() - b.filled;
    p.get().body().data = b.lent.data() + b.filled;
    p.get().body().size = room;
    beast::error_code ec;
    auto used = p.put(
        boost::asio::buffer(input_.data() + consumed_, pending_input()), ec);
    consumed_ += used;
    auto n = room - p.get().body().size;
    if (ec == bhttp::error::need_buffer || ec == bhttp::error::need_more)
      ec = {};
    if (ec == bhttp::error::body_limit)
      return fail_transfer(
          413,
          error_body("upload larger than the limit of " +
                         std::to_string(srv_->options().max_upload) + " bytes",
                     "payload_too_large"));
    if (ec)
      return fail_transfer(
          400, error_body("malformed request body", "invalid_argument"));
    if (n > 0) {
      if (!srv_->charge_upload(b.session_key, n))
        return fail_transfer(
            413,
            error_body("the session's uploads in flight would pass the "
                       "limit of " +
                           std::to_string(srv_->options().max_session_upload) +
                           " bytes",
                       "payload_too_large"));
      b.charged += n;
      received(n);
    } else if (used == 0) {
      break;
    }
  }
  if (p.is_done())
    end_of_body();
  compact_input();
}

bool connection::lend_upload_buffer(uv_buf_t* buf) {
  if (!bulk_ || pending_input() > 0)
    return false;
  auto& b = *bulk_;
  if (!b.upload || b.step != bulk_transfer::phase::running || b.failure ||
      b.body_done || !b.remaining || *b.remaining == 0)
    return false;
  if (b.lent.empty())
    b.lent = b.channel->reuse();
  // Up to the body's end: a request pipelined after it stays in the socket
  // until the parser reads it.
  buf->base = b.lent.data() + b.filled;
  buf->len = static_cast<size_t>(
      std::min<uint64_t>(*b.remaining, b.lent.size() - b.filled));
  return true;
}

bool connection::is_lent(const uv_buf_t* buf) const {
  return bulk_ && !bulk_->lent.empty() &&
         buf->base == bulk_->lent.data() + bulk_->filled;
}

void connection::received(size_t n) {
  auto& b = *bulk_;
  b.filled += n;
  b.bytes += n;
  if (b.remaining)
    *b.remaining -= n;
  // Whole buffers while the worker has some to write; while it waits,
  // whatever came.
  if (b.filled == b.lent.size() || b.channel->idle())
    hand_on_body();
}

void connection::hand_on_body() {
  auto& b = *bulk_;
  b.channel->offer(std::exchange(b.lent, std::string{}),
                   std::exchange(b.filled, 0));
}

void connection::end_of_body() {
  if (bulk_->filled > 0)
    hand_on_body();
  bulk_->body_done = true;
  bulk_->channel->end_input();
}

void connection::fail_transfer(int status, std::string body) {
  auto& b = *bulk_;
  b.failure.emplace(status, std::move(body));
  b.channel->cancel();
  update_reading();
}

void connection::on_transfer_wake() {
  if (closing_ || !bulk_)
    return;
  last_activity_ = clock_type::now();
  auto& b = *bulk_;
  if (b.step != bulk_transfer::phase::running)
    return;
  if (!b.upload) {
    pump_download();
    arm_deadline();
    return;
  }
  if (auto r = b.channel->result()) {
    if (b.failure) {
      auto [status, body] = *b.failure;
      respond(status, body, true);
      end_transfer();
    } else if (!*r) {
      auto [status, body] = failure_of(r->error());
      respond(status, body, !b.body_done || !keep_alive_);
      end_transfer();
    } else {
      for (const auto& [k, v] : **r)
        if (k != "path")
          b.result[k] = v;
      end_of_bytes();
    }
    arm_deadline();
    return;
  }
  feed_upload();
  update_reading();
  arm_deadline();
}

void connection::pump_download() {
  auto& b = *bulk_;
  if (!b.head_sent) {
    // The head goes after everything written before it.
    if (writing_ || stream_writes_ > 0)
      return;
    auto head = b.channel->take_head();
    if (!head)
      return;
    if (!*head) {
      auto [status, body] = failure_of(head->error());
      respond(status, body, !keep_alive_);
      end_transfer();
      return;
    }
    b.chunked = (*head)->at("directory").as_bool();
    b.tar = b.chunked;
    bhttp::response<bhttp::empty_body> res{bhttp::status::ok, 11};
    res.set(bhttp::field::server, "allox-workspace-daemon");
    res.set(bhttp::field::content_type,
            b.chunked ? "application/x-tar" : "application/octet-stream");
    if (b.chunked)
      res.chunked(true);
    else
      res.content_length(static_cast<uint64_t>((*head)->at("size").as_int64()));
    res.keep_alive(keep_alive_);
    b.head_sent = true;
    if (!b.chunked) {
      // A regular file: the worker writes the head and sends the file
      // (sendfile), through a descriptor of its own, so that closing ours
      // never leaves it writing to a reused number.
      int fd = socket_fd();
      int own = fd >= 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
      if (own < 0) {
        close();
        return;
      }
      b.handed_over = true;
      b.channel->hand_over({os::unique_fd{own}, serialize(res, true)});
      return;
    }
    send(serialize(res, true), false);
  }
  // Snapshot first: chunks pushed before the result are all taken below.
  auto result = b.channel->result();
  if (b.handed_over) {
    if (!result)
      return;
    if (!*result) {
      // The head is out: all a client can be told is a cut-off body.
      close();
      return;
    }
    b.bytes = static_cast<uint64_t>((*result)->at("size").as_int64());
    end_of_bytes();
    return;
  }
  bool drained = false;
  while (!closing_ &&
         uv_stream_get_write_queue_size(stream()) <= max_stream_queue) {
    auto chunk = b.channel->take();
    if (!chunk) {
      drained = true;
      break;
    }
    b.bytes += chunk->size();
    if (!b.chunked) {
      send(std::move(*chunk), false);
      continue;
    }
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", chunk->size());
    send(size + std::move(*chunk) + "\r\n", false);
  }
  if (closing_ || !drained || !result)
    return;
  if (!*result) {
    // The head is out: all a client can be told is a cut-off body.
    close();
    return;
  }
  if (b.chunked)
    send("0\r\n\r\n", false);
  if (auto* n = (*result)->if_contains("entries"))
    b.entries = n->as_int64();
  end_of_bytes();
}

void connection::end_of_bytes() {
  auto& b = *bulk_;
  b.step = bulk_transfer::phase::ending;
  if (auto* n = b.result.if_contains("entries"))
    b.entries = n->as_int64();
  srv_->transfer(this,
                 json::object{{"agent_id", b.agent_id},
                              {"session_id", b.session_id},
                              {"path", b.path},
                              {"upload", b.upload},
                              {"tar", b.tar},
                              {"bytes", static_cast<int64_t>(b.bytes)},
                              {"entries", b.entries},
                              {"epoch", b.epoch}},
                 true);
}

void connection::end_transfer() {
  if (!bulk_)
    return;
  srv_->release_upload(bulk_->session_key, bulk_->charged);
  if (bulk_->channel)
    bulk_->channel->close();
  bulk_.reset();
  reset_parser();
  request_started_ = head_done_ = clock_type::time_point::max();
  process();
  update_reading();
  arm_deadline();
}

} // namespace allox::http
