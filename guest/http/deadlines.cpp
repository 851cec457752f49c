// SPDX-License-Identifier: Apache-2.0
// What a connection may cost in time (guest/http/connection.hpp): its one
// deadline (idle, request head, body, a stalled write, a peer leaving our
// answers unread), and whether it may make room for a newcomer.
#include "guest/http/connection.hpp"

#include "guest/http/server.hpp"
#include "guest/os/socket_queue.hpp"

#include <algorithm>

namespace allox::http {

namespace {

/// A response whose write has made no progress this long may be evicted.
constexpr std::chrono::seconds stalled_write{1};

} // namespace

bool connection::evictable() const {
  if (!active() || waiting_ || bulk_ || tunnel_ != tunnel_phase::none)
    return false;
  return !(writing_ || behind_) ||
         clock_type::now() - write_progress_ >= stalled_write;
}

bool connection::peer_behind() {
  int unread = os::unacknowledged(socket_fd());
  if (unread <= max_unread_output) {
    behind_ = false;
    return false;
  }
  if (behind_ && unread < unread_)
    write_progress_ = clock_type::now();
  behind_ = true;
  unread_ = unread;
  return true;
}

std::pair<connection::clock_type::time_point, connection::overdue>
connection::next_deadline() const {
  const auto& o = srv_->options();
  // A transfer is idle once neither the peer nor its worker moved.
  if (bulk_)
    return {std::max(last_activity_, write_progress_) + o.idle_timeout,
            overdue::idle};
  // A peer that does not take our output is idle, whatever it sends.
  if (writing_ || stream_writes_ > 0)
    return {write_progress_ + o.idle_timeout, overdue::stalled_write};
  // Nor one that leaves our answers unread; whether it reads is seen
  // only by looking again.
  if (behind_)
    return {clock_type::now() + unread_recheck, overdue::unread};
  // A tunnel is idle once neither side sent or took a byte (a WebSocket
  // may be quiet a while: ten idle periods).
  if (tunnel_ == tunnel_phase::open)
    return {last_activity_ + 10 * o.idle_timeout, overdue::idle};
  // Never cut off a request the daemon is serving, nor an idle stream.
  if (waiting_)
    return {never, overdue::none};
  // From the first byte, not the last: a trickle does not reset the clock.
  if (head_done_ != never)
    return {head_done_ + o.body_timeout, overdue::body};
  if (request_started_ != never)
    return {request_started_ + o.header_timeout, overdue::head};
  return {last_activity_ + o.idle_timeout, overdue::idle};
}

void connection::arm_deadline() {
  if (closing_ || lingering_)
    return;
  auto [when, what] = next_deadline();
  if (what == overdue::none) {
    uv_timer_stop(&deadline_);
    return;
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  when - clock_type::now())
                  .count();
  uv_timer_start(&deadline_, on_deadline,
                 static_cast<uint64_t>(std::max<int64_t>(left, 0)) + 1, 0);
}

void connection::on_deadline(uv_timer_t* t) {
  auto* self = static_cast<connection*>(t->data);
  auto [when, what] = self->next_deadline();
  if (what == overdue::none)
    return;
  // The look again is due whenever the timer fires (its deadline moves
  // with the clock).
  if (what == overdue::unread) {
    if (self->peer_behind() && clock_type::now() - self->write_progress_ >=
                                   self->srv_->options().idle_timeout) {
      self->close();
      return;
    }
    self->process();
    self->update_reading();
    self->arm_deadline();
    return;
  }
  if (clock_type::now() < when) {
    self->arm_deadline();
    return;
  }
  switch (what) {
  case overdue::head:
    self->reject(408, "request head not received in time", "request_timeout");
    return;
  case overdue::body:
    self->reject(408, "request body not received in time", "request_timeout");
    return;
  default:
    self->close();
  }
}

} // namespace allox::http
