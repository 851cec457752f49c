#include "actors/rpc.hpp"

#include "actors/dump.hpp"
#include "actors/failures.hpp"
#include "guest/log.hpp"
#include "messages/ids.hpp"
#include "messages/params.hpp"

#include <caf/stateful_actor.hpp>

#include <set>
#include <vector>

namespace allox {

bool is_session_action(const std::string& action) {
  static const std::set<std::string, std::less<>> actions{
      "session.describe",
      "session.rollback",
      "session.rollback_after_runtime_reset",
      "session.unfence",
      "checkpoint.create",
      "checkpoint.list",
      "checkpoint.describe",
      "checkpoint.delete",
      "checkpoint.diff",
      "execution.acquire",
      "runtime.register_background",
      "runtime.begin_reset",
      "process.start",
      "session.configure",
      "process.list",
      "process.get",
      "process.stop",
      "process.events",
      "process.output",
  };
  return actions.count(action) > 0;
}

namespace {

using self_ptr = rpc_actor::stateful_pointer<rpc_state>;
using clock_type = std::chrono::steady_clock;

// -- request bookkeeping ------------------------------------------------------

/// Looks for expired requests soon; a short timeout is checked more often.
void arm_tick(self_ptr self) {
  auto& st = self->state;
  if (st.tick_armed)
    return;
  st.tick_armed = true;
  auto every =
      std::min<std::chrono::milliseconds>(rpc_tick, st.init.timeout / 4);
  self->delayed_send(self, every, atom::tick_v);
}

/// Starts tracking a request: it is answered exactly once, at the latest
/// init.timeout from now.
void track(self_ptr self, uint64_t ticket) {
  auto& st = self->state;
  st.in_flight.emplace(ticket, pending_request{});
  st.deadlines.emplace_back(clock_type::now() + st.init.timeout, ticket);
  arm_tick(self);
}

/// Stops tracking; false when the request was answered already (it timed
/// out, or its session actor failed).
bool untrack(self_ptr self, uint64_t ticket) {
  auto& st = self->state;
  if (st.in_flight.erase(ticket) == 0)
    return false;
  // Requests are mostly answered in order: keep the queue short.
  while (!st.deadlines.empty() &&
         st.in_flight.count(st.deadlines.front().second) == 0)
    st.deadlines.pop_front();
  return true;
}

void reply(self_ptr self, uint64_t ticket, const json::value& result) {
  if (!untrack(self, ticket))
    return;
  self->state.init.channel->post(
      {ticket, 200, ok_body(json::serialize(result))});
}

void reply_error(self_ptr self, uint64_t ticket, const caf::error& err) {
  if (!untrack(self, ticket))
    return;
  ++self->state.errors;
  auto code = code_of(err);
  auto msg = message_of(err);
  if (code == errc::internal)
    log::warn("rpc", "request failed: " + msg);
  self->state.init.channel->post(
      {ticket, http_status(code), error_body(msg, code_name(code))});
}

/// Answers every request past its deadline.
void expire(self_ptr self) {
  auto& st = self->state;
  st.tick_armed = false;
  auto now = clock_type::now();
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

/// The target went away before it handled the request: the request was
/// bounced from its mailbox (an actor that failed or was deleted), so it
/// is safe to route it again.
bool receiver_down(const caf::error& err) {
  return err.category() == caf::atom("system") &&
         err.code() == static_cast<uint8_t>(caf::sec::request_receiver_down);
}

// -- routing ------------------------------------------------------------------

/// Store- and agent-level actions go through the AGENTS actor. An agent
/// actor deleted while the request waited in its mailbox bounces it; one
/// more try finds the agent's successor or none.
void call_agents(self_ptr self, uint64_t ticket, const std::string& action,
                 const json::object& params, bool may_retry = true) {
  self->request(self->state.init.agents, caf::infinite, atom::rpc_v, action,
                json::value(params))
      .then([self, ticket](json::value& v) { reply(self, ticket, v); },
            [self, ticket, action, params, may_retry](caf::error& err) {
              if (!receiver_down(err))
                return reply_error(self, ticket, err);
              if (may_retry)
                return call_agents(self, ticket, action, params, false);
              reply_error(self, ticket,
                          make_error(errc::conflict,
                                     "the agent was deleted while the "
                                     "request waited; retry"));
            });
}

/// Remembers which session handed out a lease or reset token, and forgets
/// tokens that were used up.
void track_token(self_ptr self, const std::string& action,
                 const json::object& params, const json::value& result) {
  auto& tokens = self->state.tokens;
  auto* obj = result.if_object();
  if (obj == nullptr)
    return;
  auto remember = [&](const char* field) {
    if (auto* t = obj->if_contains(field); t && t->is_string())
      tokens[std::string{t->get_string()}] = {
          std::string{params.at("agent_id").get_string()},
          std::string{params.at("session_id").get_string()}};
  };
  if (action == "execution.acquire")
    remember("lease_token");
  else if (action == "runtime.begin_reset")
    remember("reset_token");
  else if (action == "execution.release")
    tokens.erase(std::string{params.at("lease_token").get_string()});
  else if (action == "runtime.complete_reset")
    tokens.erase(std::string{params.at("reset_token").get_string()});
}

void route_to_session(self_ptr self, uint64_t ticket, std::string action,
                      json::object params, bool may_retry = true);

/// Drops a cached session actor, unless the cache already moved on.
void forget_session(self_ptr self, const std::string& key,
                    const caf::actor_addr& addr) {
  auto& sessions = self->state.sessions;
  if (auto it = sessions.find(key);
      it != sessions.end() && it->second.address() == addr)
    sessions.erase(it);
}

void call_session(self_ptr self, uint64_t ticket, const session_actor& target,
                  const std::string& key, const std::string& action,
                  const json::object& params, bool may_retry) {
  auto it = self->state.in_flight.find(ticket);
  if (it == self->state.in_flight.end())
    return;
  it->second.owner = target.address();
  self->request(target, caf::infinite, atom::rpc_v, action, json::value(params))
      .then(
          [self, ticket, action, params](json::value& v) {
            track_token(self, action, params, v);
            reply(self, ticket, v);
          },
          [self, ticket, addr = target.address(), key, action, params,
           may_retry](caf::error& err) {
            if (!receiver_down(err))
              return reply_error(self, ticket, err);
            // Deleted (or restarted) before it saw the request: ask the
            // agent again, which knows the successor or says not_found.
            forget_session(self, key, addr);
            if (may_retry)
              return route_to_session(self, ticket, action, params, false);
            reply_error(
                self, ticket,
                make_error(errc::not_found, "session does not exist: " + key));
          });
}

void route_to_session(self_ptr self, uint64_t ticket, std::string action,
                      json::object params, bool may_retry) {
  auto aid = params::required_id(params, "agent_id", "agent");
  if (!aid)
    return reply_error(self, ticket, aid.error());
  auto sid = params::required_id(params, "session_id", "session");
  if (!sid)
    return reply_error(self, ticket, sid.error());
  auto key = session_key(*aid, *sid);
  if (auto it = self->state.sessions.find(key);
      it != self->state.sessions.end())
    return call_session(self, ticket, it->second, key, action, params,
                        may_retry);
  self->request(self->state.init.agents, caf::infinite, atom::session_v, *aid,
                *sid)
      .then(
          [self, ticket, key, action, params](session_actor& target) {
            if (self->state.sessions.emplace(key, target).second)
              self->monitor(target);
            // A fresh handle: a bounce now means the session is gone.
            call_session(self, ticket, target, key, action, params, false);
          },
          [self, ticket, key](caf::error& err) {
            // The agent actor ended (deleted) before it answered.
            if (receiver_down(err))
              return reply_error(self, ticket,
                                 make_error(errc::not_found,
                                            "session does not exist: " + key));
            reply_error(self, ticket, err);
          });
}

caf::error decode_audit_query(const json::object& p, audit_query& q) {
  if (params::has(p, "agent_id")) {
    auto a = params::required_id(p, "agent_id", "agent");
    if (!a)
      return a.error();
    q.agent_id = *a;
  }
  if (params::has(p, "session_id")) {
    auto s = params::required_id(p, "session_id", "session");
    if (!s)
      return s.error();
    q.session_id = *s;
  }
  auto op = params::optional_string(p, "op");
  if (!op)
    return op.error();
  q.op = *op;
  auto cursor = params::optional_int(p, "cursor", 0);
  if (!cursor)
    return cursor.error();
  auto limit = params::optional_int(p, "limit", 100);
  if (!limit)
    return limit.error();
  if (*cursor < 0 || *limit < 1 || *limit > 1000)
    return make_error(errc::invalid_argument,
                      "cursor must be nonnegative; limit must be 1..1000");
  q.after = *cursor;
  q.limit = *limit;
  return caf::none;
}

/// execution.release and runtime.complete_reset carry only a token; route
/// them to the session that issued it.
void route_by_token(self_ptr self, uint64_t ticket, std::string action,
                    json::object params, const char* field) {
  auto token = params::required_string(params, field);
  if (!token)
    return reply_error(self, ticket, token.error());
  auto it = self->state.tokens.find(*token);
  if (it == self->state.tokens.end()) {
    if (action == "execution.release")
      return reply(self, ticket, json::object{{"released", false}});
    return reply_error(
        self, ticket,
        make_error(errc::not_found, "unknown runtime reset token"));
  }
  params["agent_id"] = it->second.first;
  params["session_id"] = it->second.second;
  route_to_session(self, ticket, std::move(action), std::move(params));
}

void dispatch(self_ptr self, uint64_t ticket, std::string action,
              json::object params) {
  auto& init = self->state.init;
  if (action == "execution.release")
    return route_by_token(self, ticket, std::move(action), std::move(params),
                          "lease_token");
  if (action == "runtime.complete_reset")
    return route_by_token(self, ticket, std::move(action), std::move(params),
                          "reset_token");
  if (is_session_action(action) ||
      (action == "debug.fault" && params::has(params, "session_id")))
    return route_to_session(self, ticket, std::move(action), std::move(params));
  if (action == "store.initialize" || action.rfind("agent.", 0) == 0 ||
      action == "session.create" || action == "session.list" ||
      action == "session.delete" || action == "debug.fault")
    return call_agents(self, ticket, action, params);
  if (action == "audit.list") {
    audit_query q;
    if (auto err = decode_audit_query(params, q))
      return reply_error(self, ticket, err);
    self->request(init.metadata, caf::infinite, atom::audit_v, q)
        .then([self, ticket](json::value& v) { reply(self, ticket, v); },
              [self, ticket](caf::error& e) { reply_error(self, ticket, e); });
    return;
  }
  if (action == "process.status") {
    const auto& exec = init.exec;
    if (!exec)
      return reply(self, ticket,
                   json::object{{"enabled", false}, {"backend", "disabled"}});
    json::array controllers;
    for (auto& c : exec->cgroups.controllers())
      controllers.emplace_back(c);
    return reply(self, ticket,
                 json::object{{"enabled", false},
                              {"backend", "disabled"},
                              {"abi", 1},
                              {"ready", true},
                              {"error", nullptr},
                              {"execution_enabled", true},
                              {"cgroup_root", exec->cgroups.root()},
                              {"audit_root", exec->audit_root},
                              {"isolation", "bubblewrap"},
                              {"cgroup_controllers", std::move(controllers)}});
  }
  if (action == "system.dump") {
    self->request(init.supervisor, caf::infinite, atom::dump_v)
        .then(
            [self, ticket](json::value& tree) {
              json::object o{{"daemon", self->state.init.daemon_info},
                             {"tree", std::move(tree)}};
              reply(self, ticket, o);
            },
            [self, ticket](caf::error& e) { reply_error(self, ticket, e); });
    return;
  }
  reply_error(self, ticket,
              make_error(errc::invalid_argument, "unknown action: " + action));
}

} // namespace

rpc_actor::behavior_type rpc(self_ptr self, rpc_init init) {
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
      [self](atom::rpc, uint64_t ticket, std::string& action,
             json::value& params) {
        ++self->state.requests;
        track(self, ticket);
        self->state.handling = action;
        dispatch(self, ticket, std::move(action),
                 std::move(params.as_object()));
        self->state.handling.clear();
      },
      [self](atom::tick) { expire(self); },
      [self](atom::log) {
        self->request(self->state.init.supervisor, caf::infinite, atom::dump_v)
            .then(
                [](json::value& tree) {
                  log::info("dump", json::serialize(tree));
                },
                [](caf::error& err) {
                  log::error("dump", "system dump failed: " + message_of(err));
                });
      },
      [self](atom::dump) -> json::value {
        auto& st = self->state;
        json::object o;
        o["kind"] = "rpc";
        o["state"] = st.in_flight.empty() ? "idle" : "busy";
        o["mailbox"] = self->mailbox().size();
        o["counters"] = json::object{{"requests", st.requests},
                                     {"errors", st.errors},
                                     {"cached_sessions", st.sessions.size()},
                                     {"in_flight", st.in_flight.size()}};
        o["uptime_ms"] = uptime_ms(st.started);
        return o;
      },
  };
}

} // namespace allox
