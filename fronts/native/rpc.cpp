// SPDX-License-Identifier: Apache-2.0
#include "fronts/native/rpc.hpp"

#include "fronts/native/routing.hpp"

#include "actors/dump.hpp"
#include "actors/failures.hpp"
#include "guest/log.hpp"
#include "guest/os/cgroup.hpp"
#include "messages/results/stats_json.hpp"

#include <caf/stateful_actor.hpp>

#include <optional>
#include <vector>

namespace allox {

namespace rpc_detail {

// -- request bookkeeping ------------------------------------------------------

/// Looks for expired requests soon; a short timeout is checked more often.
static void arm_tick(self_ptr self) {
  auto& st = self->state;
  if (st.tick_armed)
    return;
  st.tick_armed = true;
  auto every =
      std::min<std::chrono::milliseconds>(rpc_tick, st.init.timeout / 4);
  self->delayed_send(self, every, atom::tick_v);
}

/// Starts tracking a request: it is answered exactly once, through
/// `reply`, at the latest init.timeout from now.
uint64_t track(self_ptr self, reply_fn reply) {
  return track(self, pending_request{std::move(reply), {}, {}});
}

uint64_t track(self_ptr self, transfer_answer answer) {
  return track(self, pending_request{{}, std::move(answer), {}});
}

uint64_t track(self_ptr self, pending_request request) {
  auto& st = self->state;
  auto ticket = st.next_ticket++;
  st.in_flight.emplace(ticket, std::move(request));
  // The actor clock: steady time in the daemon, the test clock in tests.
  st.deadlines.emplace_back(self->clock().now() + st.init.timeout, ticket);
  arm_tick(self);
  return ticket;
}

/// Stops tracking; returns where the answer goes, or nothing when the
/// request was answered already (it timed out, or its session actor
/// failed).
static std::optional<pending_request> untrack(self_ptr self, uint64_t ticket) {
  auto& st = self->state;
  auto it = st.in_flight.find(ticket);
  if (it == st.in_flight.end())
    return std::nullopt;
  auto answer = std::move(it->second);
  st.in_flight.erase(it);
  // Requests are mostly answered in order: keep the queue short.
  while (!st.deadlines.empty() &&
         st.in_flight.count(st.deadlines.front().second) == 0)
    st.deadlines.pop_front();
  return answer;
}

void reply(self_ptr self, uint64_t ticket, const json::value& result) {
  reply(self, ticket, result, nullptr);
}

void reply(self_ptr self, uint64_t ticket, const json::value& result,
           std::shared_ptr<const actor_stats> stats) {
  if (auto answer = untrack(self, ticket); answer && answer->reply)
    answer->reply({200, ok_body(json::serialize(result)), std::move(stats)});
}

void reply_transfer(self_ptr self, uint64_t ticket, transfer_begun r) {
  if (auto answer = untrack(self, ticket); answer && answer->transfer.begun)
    answer->transfer.begun(std::move(r));
}

void reply_transfer(self_ptr self, uint64_t ticket, transfer_audited r) {
  if (auto answer = untrack(self, ticket); answer && answer->transfer.audited)
    answer->transfer.audited(std::move(r));
}

void reply_error(self_ptr self, uint64_t ticket, const caf::error& err) {
  auto answer = untrack(self, ticket);
  if (!answer)
    return;
  ++self->state.errors;
  auto code = code_of(err);
  auto msg = message_of(err);
  if (code == errc::internal)
    log::warn("rpc",
              "request failed: " + msg + " (" + caf::to_string(err) + ")");
  if (answer->transfer.begun)
    return answer->transfer.begun(err);
  if (answer->transfer.audited)
    return answer->transfer.audited(err);
  if (answer->reply)
    answer->reply(
        {http_status(code), error_body(msg, code_name(code)), nullptr});
}

/// Answers every request past its deadline.
void expire(self_ptr self) {
  auto& st = self->state;
  st.tick_armed = false;
  auto now = self->clock().now();
  while (!st.deadlines.empty()) {
    auto [deadline, ticket] = st.deadlines.front();
    if (st.in_flight.count(ticket) > 0 && deadline > now)
      break;
    st.deadlines.pop_front();
    if (st.in_flight.count(ticket) > 0)
      reply_error(
          self, ticket,
          make_error(errc::internal, "request timed out inside the daemon"));
  }
  if (!st.in_flight.empty())
    arm_tick(self);
}

} // namespace rpc_detail

namespace {

using namespace rpc_detail;

/// Every action goes by its entry in the routing table
/// (fronts/native/routes.cpp).
void dispatch(self_ptr self, uint64_t ticket, std::string action,
              json::object params) {
  const auto& table = routes();
  if (auto it = table.find(action); it != table.end())
    return it->second(self, ticket, params);
  reply_error(self, ticket,
              make_error(errc::invalid_argument, "unknown action: " + action));
}

} // namespace

rpc_actor::behavior_type rpc(rpc_detail::self_ptr self, rpc_init init) {
  using namespace rpc_detail;
  self->state.init = std::move(init);
  self->state.started = std::chrono::steady_clock::now();
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    for (auto it = st.sessions.begin(); it != st.sessions.end();) {
      if (it->second.address() == dm.source)
        it = st.sessions.erase(it);
      else
        ++it;
    }
    // Requests still waiting on the actor were accepted and will never be
    // answered (those it never saw came back as bounces and were routed
    // again). A deleted session is gone; a failed one was restarted.
    bool failed = dm.reason && dm.reason != caf::exit_reason::user_shutdown;
    std::vector<uint64_t> orphans;
    for (const auto& [ticket, pending] : st.in_flight)
      if (pending.owner == dm.source)
        orphans.push_back(ticket);
    for (auto ticket : orphans)
      reply_error(self, ticket,
                  failed ? make_error(errc::internal,
                                      "session actor failed while handling "
                                      "the request (" +
                                          message_of(dm.reason) +
                                          "); it has been restarted")
                         : make_error(errc::not_found,
                                      "the session ended before answering"));
  });
  self->set_exception_handler([self](std::exception_ptr& ep) {
    return actor_failed(ep, "rpc", self->state.handling);
  });
  return {
      [self](rpc_request& req) {
        ++self->state.requests;
        auto ticket = track(self, std::move(req.reply));
        if (!req.params.is_object())
          return reply_error(
              self, ticket,
              make_error(errc::invalid_argument, "params must be an object"));
        self->state.handling = req.action;
        dispatch(self, ticket, std::move(req.action),
                 std::move(req.params.as_object()));
        self->state.handling.clear();
      },
      [self](atom::tick) { expire(self); },
      [self](stream_request& req) {
        ++self->state.requests;
        open_stream(self, req);
      },
      [self](transfer_request& req) {
        ++self->state.requests;
        open_transfer(self, req);
      },
      [self](atom::log) {
        self->request(self->state.init.supervisor, caf::infinite, atom::stats_v)
            .then(
                [](actor_stats& tree) {
                  log::info("dump", json::serialize(to_json(tree)));
                },
                [](caf::error& err) {
                  log::error("dump", "system dump failed: " + message_of(err));
                });
      },
      [self](atom::stats) {
        auto& st = self->state;
        actor_stats s;
        s.kind = "rpc";
        s.top()
            .fact("state", st.in_flight.empty() ? "idle" : "busy")
            .gauge("mailbox", self->mailbox().size());
        s.group("counters")
            .counter("requests", st.requests)
            .counter("errors", st.errors)
            .gauge("cached_sessions", st.sessions.size())
            .gauge("in_flight", st.in_flight.size());
        s.top().gauge("uptime_ms", uptime_ms(st.started));
        // The daemon's, for operators and the density bench.
        s.top().gauge("rss_bytes", os::resident_bytes("self"));
        return s;
      },
  };
}

} // namespace allox
