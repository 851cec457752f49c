// SPDX-License-Identifier: Apache-2.0
// Bulk file transfers: a front's streamed routes (routes.hpp,
// transfer_plan), the native PUT and GET /v1/files/{agent}/{session}/{path}
// among them (docs/rpc.md, "Bulk file transfer").
//
//   head:    the route's access rule; its front answers (a refusal) or
//            plans the transfer (planning); Content-Length against
//            --max-upload-bytes and the session's uploads in flight
//            against --max-session-upload-bytes (413 at once)
//   begin:   RPC -> SESSION: may it (no upload while mutating), where is
//            it ({root, rel, path}); then `100 Continue` if asked
//   bytes:   a worker thread of its own runs the file job
//            (transfer_job.hpp); the body goes to it chunk by chunk
//            (reading stops while its queue is full), a download comes
//            from it the same way (taken while the socket's write queue is
//            short). A body of declared length is read from the socket
//            straight into the worker's buffers.
//   end:     RPC -> SESSION: audit (file.upload / file.download, bytes);
//            then the upload's reply, and the next request
// A failure on the loop side (limit, malformed body) cancels the worker
// and is answered once it has removed what it wrote.
#include "guest/http/transfer.hpp"

#include "guest/http/connection.hpp"
#include "guest/http/server.hpp"
#include "guest/http/transfer_job.hpp"
#include "guest/http/wire.hpp"
#include "messages/rpc.hpp"

#include <boost/beast/http/empty_body.hpp>

#include <fcntl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

namespace allox::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

// -- the connection's side ----------------------------------------------------

namespace {

/// The error an RPC reply body ({"error", "code"}) carries.
caf::error upload_limit(uint64_t limit) {
  return make_error(errc::payload_too_large,
                    "upload larger than the limit of " + std::to_string(limit) +
                        " bytes");
}

caf::error session_upload_limit(uint64_t limit) {
  return make_error(errc::payload_too_large,
                    "the session's uploads in flight would pass the limit of " +
                        std::to_string(limit) + " bytes");
}

} // namespace

void connection::transfer_error(const caf::error& err, bool close_after) {
  auto r = bulk_->plan->failed(err);
  respond(r.status, std::move(r.body), close_after, r.content_type, &r.headers);
}

void connection::refuse_transfer(const caf::error& err) {
  srv_->count_rejected(bulk_->plan->failed(err).status);
  // The body was never read: close after answering (a download's body
  // taken for the next request would be a request smuggled in).
  transfer_error(err, bulk_->upload || body_unread() || !keep_alive_);
  end_transfer();
}

bool connection::body_unread() const {
  // An upload's parser went to its transfer: asked of downloads only.
  return !bulk_->upload &&
         (parser_->content_length().value_or(0) > 0 || parser_->chunked());
}

void connection::plan_transfer(const route& r) {
  const auto& req = parser_->get();
  auto b = std::make_unique<bulk_transfer>();
  b->step = bulk_transfer::phase::planning;
  b->upload =
      req.method() == bhttp::verb::post || req.method() == bhttp::verb::put;
  bulk_ = std::move(b);
  route_request head{req.base()};
  srv_->serve_route(this, r, std::move(head));
}

void connection::begin_planned(transfer_plan plan) {
  if (closing_ || !bulk_ || bulk_->step != bulk_transfer::phase::planning)
    return;
  auto& b = *bulk_;
  b.step = bulk_transfer::phase::begin;
  if (plan.upload != b.upload) {
    b.plan = std::make_shared<const transfer_plan>(std::move(plan));
    return refuse_transfer(make_error(
        errc::invalid_argument, b.upload ? "a download takes no request body"
                                         : "the upload has no body"));
  }
  b.agent_id = plan.agent_id;
  b.session_id = plan.session_id;
  b.path = plan.path;
  b.tar = plan.upload && plan.tar;
  b.plan = std::make_shared<const transfer_plan>(std::move(plan));
  begin_transfer();
}

void connection::begin_transfer() {
  auto& b = *bulk_;
  const auto& o = srv_->options();
  b.session_key = b.agent_id + "/" + b.session_id;
  if (!b.upload) {
    if (parser_->content_length().value_or(0) > 0 || parser_->chunked())
      return refuse_transfer(make_error(errc::invalid_argument,
                                        "a download takes no request body"));
  } else {
    const auto& req = parser_->get();
    b.expect_continue =
        beast::iequals(req[bhttp::field::expect], "100-continue");
    auto length = parser_->content_length();
    if (length && *length > o.max_upload)
      return refuse_transfer(upload_limit(o.max_upload));
    // A declared length counts in full at once; a chunked body as it comes.
    if (length) {
      if (!srv_->charge_upload(b.session_key, *length))
        return refuse_transfer(session_upload_limit(o.max_session_upload));
      b.charged = *length;
    }
    b.body.emplace(std::move(*parser_));
    b.body->body_limit(o.max_upload);
  }
  cmd::file_transfer_begin step;
  step.session = {b.agent_id, b.session_id};
  step.path = b.path;
  step.upload = b.upload;
  srv_->transfer(this, std::move(step));
}

void connection::on_transfer_ended(caf::error err) {
  waiting_ = false;
  if (closing_ || !bulk_)
    return;
  auto& b = *bulk_;
  if (b.upload) {
    // A job that ended before the body did (a form's epilogue, a tar's
    // trailer) leaves bytes that are no request: close after.
    bool close_after = !keep_alive_ || !b.body_done;
    if (err) {
      transfer_error(err, close_after);
    } else {
      auto r = b.plan->done(b.result);
      respond(r.status, std::move(r.body), close_after, r.content_type,
              &r.headers);
    }
  }
  end_transfer();
  arm_deadline();
}

void connection::on_transfer_begun(expected<transfer_begun> begun) {
  waiting_ = false;
  if (closing_ || !bulk_)
    return;
  auto& b = *bulk_;
  if (!begun) {
    // The body (if any) was never read: close after answering.
    transfer_error(begun.error(), b.upload || !keep_alive_);
    end_transfer();
    arm_deadline();
    return;
  }
  b.step = bulk_transfer::phase::running;
  if (b.upload)
    if (auto length = b.body->content_length())
      b.remaining = *length;
  b.result = json::object{{"path", begun->path}};
  b.epoch = begun->epoch;
  b.channel = transfer_channel::open(tcp_.loop, [this] { on_transfer_wake(); });
  transfer_job job;
  job.upload = b.upload;
  job.tar = b.tar;
  job.root = std::move(begun->root);
  job.rel = std::move(begun->rel);
  job.max_bytes = srv_->options().max_upload;
  job.marks = std::move(begun->uploads_dir);
  job.shared = begun->shared;
  const auto& plan = *b.plan;
  job.name_files = plan.name_files;
  job.directories = plan.directories;
  job.gunzip = plan.gunzip;
  job.gzip = plan.gzip;
  job.make_parents = plan.make_parents;
  job.form_boundary = plan.form_boundary;
  job.part_path = plan.part_path;
  run_transfer_job(b.channel, std::move(job));
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
      return fail_transfer(upload_limit(srv_->options().max_upload));
    if (ec)
      return fail_transfer(
          make_error(errc::invalid_argument, "malformed request body"));
    if (n > 0) {
      if (!srv_->charge_upload(b.session_key, n))
        return fail_transfer(
            session_upload_limit(srv_->options().max_session_upload));
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

void connection::fail_transfer(caf::error why) {
  auto& b = *bulk_;
  b.failure = std::move(why);
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
      transfer_error(b.failure, true);
      end_transfer();
    } else if (!*r) {
      transfer_error(r->error(), !b.body_done || !keep_alive_);
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
      transfer_error(head->error(), !keep_alive_);
      end_transfer();
      return;
    }
    b.tar = (*head)->at("directory").as_bool();
    bool gzip = (*head)->at("gzip").as_bool();
    b.chunked = b.tar || gzip;
    bhttp::response<bhttp::empty_body> res{bhttp::status::ok, 11};
    res.set(bhttp::field::server, "allox-workspace-daemon");
    res.set(bhttp::field::content_type,
            b.tar ? "application/x-tar" : "application/octet-stream");
    if (gzip)
      res.set(bhttp::field::content_encoding, "gzip");
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
  cmd::file_transfer_end step;
  step.session = {b.agent_id, b.session_id};
  step.path = b.path;
  step.upload = b.upload;
  step.tar = b.tar;
  step.bytes = static_cast<int64_t>(b.bytes);
  step.entries = b.entries;
  step.epoch = b.epoch;
  step.origin = b.plan->origin;
  if (b.plan->name_files)
    if (const auto* files = b.result.if_contains("files"))
      for (const auto& f : files->as_array())
        step.files.emplace_back(f.as_object().at("path").as_string());
  srv_->transfer(this, std::move(step));
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
