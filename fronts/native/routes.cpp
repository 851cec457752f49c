// SPDX-License-Identifier: Apache-2.0
// The RPC actor's routing: one table from action name to a function that
// decodes the request's command once and sends it to the actor that owns
// it (a SESSION, AGENTS, METADATA or SUPERVISOR), with the re-routing of
// requests bounced by an actor that ended before it saw them.
#include "fronts/native/routing.hpp"

#include "guest/faults.hpp"
#include "messages/commands/command.hpp"
#include "messages/commands/lists.hpp"
#include "messages/ids.hpp"
#include "messages/params.hpp"
#include "messages/results/admin_json.hpp"
#include "messages/results/agents_json.hpp"
#include "messages/results/checkpoints_json.hpp"
#include "messages/results/files_json.hpp"
#include "messages/results/network_json.hpp"
#include "messages/results/pause_json.hpp"
#include "messages/results/processes_json.hpp"
#include "messages/results/runs_json.hpp"
#include "messages/results/runtime_json.hpp"
#include "messages/results/sessions_json.hpp"
#include "messages/results/settings_json.hpp"
#include "messages/results/turns_json.hpp"

#include <stdexcept>
#include <type_traits>
#include <variant>

namespace allox::rpc_detail {

namespace {

// -- routing ------------------------------------------------------------------

/// Store- and agent-level commands go through the AGENTS actor. An agent
/// actor deleted while the request waited in its mailbox bounces it; one
/// more try finds the agent's successor or none.
template <class Command>
void call_agents(self_ptr self, uint64_t ticket, Command cmd,
                 bool may_retry = true) {
  self->request(self->state.init.agents, caf::infinite, cmd)
      .then(
          [self, ticket](cmd::reply_t<Command>& r) {
            if constexpr (std::is_same_v<cmd::reply_t<Command>, json::value>)
              reply(self, ticket, r);
            else
              reply(self, ticket, to_json(r));
          },
          [self, ticket, cmd, may_retry](caf::error& err) mutable {
            if (!receiver_down(err))
              return reply_error(self, ticket, err);
            if (may_retry)
              return call_agents(self, ticket, std::move(cmd), false);
            reply_error(self, ticket,
                        make_error(errc::conflict,
                                   "the agent was deleted while the "
                                   "request waited; retry"));
          });
}

// -- session commands ---------------------------------------------------------

/// What a session replies to each command.
template <class Command>
struct reply_of {
  using type = cmd::reply_t<Command>;
};

using tokens_map = decltype(rpc_state::tokens);

/// Turns a session's reply into the wire result; tokens handed out or used
/// up update the table that routes execution.release and
/// runtime.complete_reset (they name only the token).
template <class Command>
json::value accept(tokens_map&, const Command&, json::value& v) {
  return std::move(v);
}

/// A typed result, as the native wire spells it (messages/results/).
template <class Command, class Result>
json::value accept(tokens_map&, const Command&, Result& r) {
  return to_json(r);
}

json::value accept(tokens_map& tokens, const cmd::execution_acquire& c,
                   lease_granted& g) {
  tokens[g.lease_token] = {c.session.agent_id, c.session.session_id};
  return to_json(g);
}

json::value accept(tokens_map& tokens, const cmd::runtime_begin_reset& c,
                   reset_begun& r) {
  tokens[r.reset_token] = {c.session.agent_id, c.session.session_id};
  return to_json(r);
}

json::value accept(tokens_map& tokens, const cmd::execution_release& c,
                   lease_released& r) {
  tokens.erase(c.lease_token);
  return to_json(r);
}

json::value accept(tokens_map& tokens, const cmd::runtime_complete_reset& c,
                   reset_completed& r) {
  tokens.erase(c.reset_token);
  return to_json(r);
}

/// Drops a cached session actor, unless the cache already moved on.
void forget_session(self_ptr self, const std::string& key,
                    const caf::actor_addr& addr) {
  auto& sessions = self->state.sessions;
  if (auto it = sessions.find(key);
      it != sessions.end() && it->second.address() == addr)
    sessions.erase(it);
}

/// Answers a routed request with its session's result: on the native
/// wire, or typed to a bulk transfer's step.
template <class Command, class Result>
void answer(self_ptr self, uint64_t ticket, const Command& cmd, Result& r) {
  reply(self, ticket, accept(self->state.tokens, cmd, r));
}

void answer(self_ptr self, uint64_t ticket, const cmd::file_transfer_begin&,
            transfer_begun& r) {
  reply_transfer(self, ticket, std::move(r));
}

void answer(self_ptr self, uint64_t ticket, const cmd::file_transfer_end&,
            transfer_audited& r) {
  reply_transfer(self, ticket, r);
}

template <class Command>
void send_to_session(self_ptr self, uint64_t ticket, Command cmd,
                     bool may_retry = true);

template <class Command>
void request_session(self_ptr self, uint64_t ticket,
                     const session_actor& target, Command cmd, bool may_retry) {
  auto it = self->state.in_flight.find(ticket);
  if (it == self->state.in_flight.end())
    return;
  it->second.owner = target.address();
  self->request(target, caf::infinite, cmd)
      .then(
          [self, ticket, cmd](typename reply_of<Command>::type& r) {
            answer(self, ticket, cmd, r);
          },
          [self, ticket, addr = target.address(), cmd,
           may_retry](caf::error& err) mutable {
            if (!receiver_down(err))
              return reply_error(self, ticket, err);
            // Deleted (or restarted) before it saw the request: ask the
            // agent again, which knows the successor or says not_found.
            auto key =
                session_key(cmd.session.agent_id, cmd.session.session_id);
            forget_session(self, key, addr);
            if (may_retry)
              return send_to_session(self, ticket, std::move(cmd), false);
            reply_error(
                self, ticket,
                make_error(errc::not_found, "session does not exist: " + key));
          });
}

/// Sends a command to its session actor: the cached handle, else the one
/// AGENTS names (cached and monitored from then on).
template <class Command>
void send_to_session(self_ptr self, uint64_t ticket, Command cmd,
                     bool may_retry) {
  auto key = session_key(cmd.session.agent_id, cmd.session.session_id);
  if (auto it = self->state.sessions.find(key);
      it != self->state.sessions.end())
    return request_session(self, ticket, it->second, std::move(cmd), may_retry);
  auto aid = cmd.session.agent_id;
  auto sid = cmd.session.session_id;
  self->request(self->state.init.agents, caf::infinite, atom::session_v, aid,
                sid)
      .then(
          [self, ticket, key, cmd](session_actor& target) mutable {
            if (self->state.sessions.emplace(key, target).second)
              self->monitor(target);
            // A fresh handle: a bounce now means the session is gone.
            request_session(self, ticket, target, std::move(cmd), false);
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

/// The session a request names, validated.
expected<session_ref> session_of(const json::object& p) {
  auto aid = params::required_id(p, "agent_id", "agent");
  if (!aid)
    return aid.error();
  auto sid = params::required_id(p, "session_id", "session");
  if (!sid)
    return sid.error();
  return session_ref{std::move(*aid), std::move(*sid)};
}

/// Decodes a session command and sends it on; `needs_exec` refuses it
/// first on a daemon without tracked execution.
template <class Command>
void route(self_ptr self, uint64_t ticket, expected<session_ref> ref,
           expected<Command> cmd, bool needs_exec = false) {
  if (!ref)
    return reply_error(self, ticket, ref.error());
  if (needs_exec && !self->state.init.exec)
    return reply_error(self, ticket,
                       make_error(errc::unsupported,
                                  "process tracking is not enabled on this "
                                  "daemon"));
  if (!cmd)
    return reply_error(self, ticket, cmd.error());
  cmd->session = std::move(*ref);
  send_to_session(self, ticket, std::move(*cmd));
}

/// execution.release and runtime.complete_reset carry only a token: the
/// session that issued it is looked up in the token table.
template <class Command>
void route_by_token(self_ptr self, uint64_t ticket, expected<Command> cmd,
                    const std::string& (*token_of)(const Command&)) {
  if (!cmd)
    return reply_error(self, ticket, cmd.error());
  auto it = self->state.tokens.find(token_of(*cmd));
  if (it == self->state.tokens.end()) {
    if constexpr (std::is_same_v<Command, cmd::execution_release>)
      return reply(self, ticket, to_json(lease_released{false}));
    else
      return reply_error(
          self, ticket,
          make_error(errc::not_found, "unknown runtime reset token"));
  }
  cmd->session = {it->second.first, it->second.second};
  send_to_session(self, ticket, std::move(*cmd));
}

/// A row: decode `Command` and send it to the session the request names
/// (refused first on a daemon without tracked execution if it needs it).
template <class Command>
void to_session(self_ptr self, uint64_t ticket, const json::object& p) {
  route(self, ticket, session_of(p), cmd::decode<Command>(p),
        cmd::needs_exec<Command>::value);
}

/// session.rollback(_after_runtime_reset): kill_processes defaults to the
/// daemon's --kill-session-processes-on-rollback.
template <bool AfterReset>
void to_rollback(self_ptr self, uint64_t ticket, const json::object& p) {
  const auto& exec = self->state.init.exec;
  route(self, ticket, session_of(p),
        cmd::decode<cmd::session_rollback>(p, AfterReset,
                                           exec && exec->kill_on_rollback));
}

/// policy.get/set: a session's level at its SESSION; without a session_id
/// the agent's level at its AGENT (through AGENTS).
template <class Command>
void to_policy(self_ptr self, uint64_t ticket, const json::object& p) {
  if (params::has(p, "session_id"))
    return route(self, ticket, session_of(p), cmd::decode<Command>(p));
  auto aid = params::required_id(p, "agent_id", "agent");
  if (!aid)
    return reply_error(self, ticket, aid.error());
  auto cmd = cmd::decode<Command>(p);
  if (!cmd)
    return reply_error(self, ticket, cmd.error());
  cmd->session.agent_id = std::move(*aid);
  call_agents(self, ticket, std::move(*cmd));
}

const std::string& lease_of(const cmd::execution_release& c) {
  return c.lease_token;
}

const std::string& reset_of(const cmd::runtime_complete_reset& c) {
  return c.reset_token;
}

/// execution.release and runtime.complete_reset: by their token.
template <class Command>
void to_token_owner(self_ptr self, uint64_t ticket, const json::object& p) {
  if constexpr (std::is_same_v<Command, cmd::execution_release>)
    route_by_token(self, ticket, cmd::decode<Command>(p), lease_of);
  else
    route_by_token(self, ticket, cmd::decode<Command>(p), reset_of);
}

/// debug.fault with a session_id arms a fault in that session's actor.
void route_session_fault(self_ptr self, uint64_t ticket,
                         const json::object& p) {
  auto ref = session_of(p);
  if (!ref)
    return reply_error(self, ticket, ref.error());
  auto f = parse_fault(p);
  if (!f)
    return reply_error(self, ticket, f.error());
  send_to_session(
      self, ticket,
      cmd::debug_fault{std::move(*ref), f->point, f->effect, f->millis});
}

caf::error decode_audit_query(const json::object& p, audit_query& q) {
  params::reader r{p};
  if (r.has("agent_id"))
    q.agent_id = r.required_id("agent_id", "agent");
  if (r.has("session_id"))
    q.session_id = r.required_id("session_id", "session");
  q.op = r.optional_string("op");
  q.after = r.optional_int("cursor", 0);
  q.limit = r.optional_int("limit", 100);
  r.check(q.after >= 0 && q.limit >= 1 && q.limit <= 1000,
          "cursor must be nonnegative; limit must be 1..1000");
  return r.error();
}

// -- store and agent commands -------------------------------------------------

/// A row: decode `Command` and send it to AGENTS.
template <class Command>
void to_agents(self_ptr self, uint64_t ticket, const json::object& p) {
  auto cmd = cmd::decode<Command>(p);
  if (!cmd)
    return reply_error(self, ticket, cmd.error());
  call_agents(self, ticket, std::move(*cmd));
}

/// debug.fault without a session_id arms a fault in the agent's actor.
void route_agent_fault(self_ptr self, uint64_t ticket, const json::object& p) {
  auto aid = params::required_id(p, "agent_id", "agent");
  if (!aid)
    return reply_error(self, ticket, aid.error());
  auto f = parse_fault(p);
  if (!f)
    return reply_error(self, ticket, f.error());
  call_agents(
      self, ticket,
      cmd::agent_debug_fault{std::move(*aid), f->point, f->effect, f->millis});
}

// -- daemon-level actions
// ------------------------------------------------------

/// audit.list: a page of the audit trail, from METADATA.
void route_audit(self_ptr self, uint64_t ticket, const json::object& p) {
  audit_query q;
  if (auto err = decode_audit_query(p, q))
    return reply_error(self, ticket, err);
  self->request(self->state.init.metadata, caf::infinite, atom::audit_v, q)
      .then([self,
             ticket](audit_page& page) { reply(self, ticket, to_json(page)); },
            [self, ticket](caf::error& e) { reply_error(self, ticket, e); });
}

/// process.status: the execution settings, answered by RPC itself.
void route_process_status(self_ptr self, uint64_t ticket, const json::object&) {
  execution_status s;
  if (const auto& exec = self->state.init.exec) {
    s.execution_enabled = true;
    s.tracked = static_cast<bool>(exec->tracker);
    s.cgroup_root = exec->cgroups.root();
    s.audit_root = exec->audit_root;
    s.cgroup_controllers = exec->cgroups.controllers();
    s.store_devices = exec->store_devices;
    s.store_quotas = exec->store_quotas;
    s.store_quota_mode = !exec->store_quotas         ? "off"
                         : exec->store_simple_quotas ? "simple"
                                                     : "full";
  }
  reply(self, ticket, to_json(s));
}

/// tracker.status: the TRACKER's state and counters.
void route_tracker_status(self_ptr self, uint64_t ticket, const json::object&) {
  const auto& exec = self->state.init.exec;
  if (!exec || !exec->tracker)
    return reply(self, ticket,
                 json::object{{"backend", "disabled"},
                              {"ready", false},
                              {"error", nullptr}});
  // Its counters: backend, readiness, events, losses, restarts, error.
  self->request(exec->tracker, caf::infinite, atom::stats_v)
      .then(
          [self, ticket](actor_stats& s) {
            reply(self, ticket, to_json(s).at("counters"));
          },
          [self, ticket](caf::error& e) { reply_error(self, ticket, e); });
}

/// system.dump: the actor tree from SUPERVISOR, with the daemon's facts.
void route_dump(self_ptr self, uint64_t ticket, const json::object&) {
  self->request(self->state.init.supervisor, caf::infinite, atom::stats_v)
      .then(
          [self, ticket](actor_stats& tree) {
            json::object o{{"daemon", self->state.init.daemon_info},
                           {"tree", to_json(tree)}};
            // The typed tree goes along: a /metrics scrape renders from it.
            reply(self, ticket, o,
                  std::make_shared<const actor_stats>(std::move(tree)));
          },
          [self, ticket](caf::error& e) { reply_error(self, ticket, e); });
}

/// debug.fault: into the session's actor with a session_id, else into the
/// agent's.
void route_fault(self_ptr self, uint64_t ticket, const json::object& p) {
  if (params::has(p, "session_id"))
    return route_session_fault(self, ticket, p);
  route_agent_fault(self, ticket, p);
}

// -- the table ----------------------------------------------------------------

using route_table = std::unordered_map<std::string_view, route_fn>;

/// Adds a row; two rows for one action would make the table depend on
/// the order of the lists, so that is a programming error.
void add_row(route_table& t, std::string_view action, route_fn fn) {
  if (auto [it, fresh] = t.emplace(action, fn); !fresh && it->second != fn)
    throw std::logic_error("two routing rows for " + std::string{action});
}

/// The row of a command a SESSION serves: most go to the session the
/// request names; a few are routed by what else they carry.
template <class Command>
route_fn session_row() {
  using namespace cmd;
  if constexpr (std::is_same_v<Command, policy_get> ||
                std::is_same_v<Command, policy_set>)
    return to_policy<Command>;
  else if constexpr (std::is_same_v<Command, execution_release> ||
                     std::is_same_v<Command, runtime_complete_reset>)
    return to_token_owner<Command>;
  else
    return to_session<Command>;
}

/// The row of a command AGENTS serves or forwards to an AGENT.
template <class Command>
route_fn agents_row() {
  if constexpr (std::is_same_v<Command, cmd::policy_get> ||
                std::is_same_v<Command, cmd::policy_set>)
    return session_row<Command>();
  else
    return to_agents<Command>;
}

template <class Command>
struct command_tag {
  using type = Command;
};

/// The row `row` gives a command, if it is an action (commands without a
/// decoder are sent by actors only).
template <class Command, class Row>
void add_action(route_table& t, command_tag<Command> tag, Row row) {
  if constexpr (cmd::is_action_v<Command>)
    add_row(t, Command::name, row(tag));
}

/// One row per action of a command list.
template <class... Commands, class Row>
void add_rows(route_table& t, caf::detail::type_list<Commands...>, Row row) {
  (add_action(t, command_tag<Commands>{}, row), ...);
}

} // namespace

const route_table& routes() {
  static const auto table = [] {
    route_table all;
    auto at_session = [](auto tag) {
      return session_row<typename decltype(tag)::type>();
    };
    auto at_agents = [](auto tag) {
      return agents_row<typename decltype(tag)::type>();
    };
    add_rows(all, cmd::session_commands{}, at_session);
    add_rows(all, cmd::agent_commands{}, at_agents);
    add_rows(all, cmd::agents_commands{}, at_agents);
    // Actions whose command another action shares, or that several actors
    // answer, and those RPC answers itself.
    add_row(all, "session.rollback", to_rollback<false>);
    add_row(all, "session.rollback_after_runtime_reset", to_rollback<true>);
    add_row(all, "debug.fault", route_fault);
    add_row(all, "audit.list", route_audit);
    add_row(all, "process.status", route_process_status);
    add_row(all, "tracker.status", route_tracker_status);
    add_row(all, "system.dump", route_dump);
    return all;
  }();
  return table;
}

/// GET /v1/stream: subscribes the stream's sink to the run's state.
void open_stream(self_ptr self, stream_request& req) {
  auto ticket = track(self, std::move(req.reply));
  const auto* params = req.params.if_object();
  if (params == nullptr)
    return reply_error(self, ticket,
                       make_error(errc::invalid_argument,
                                  "stream requires agent_id, session_id and "
                                  "run_id"));
  expected<cmd::process_subscribe> sub{cmd::process_subscribe{}};
  if (auto get = cmd::decode<cmd::process_get>(*params); get) {
    sub->run_id = std::move(get->run_id);
    sub->sink = std::move(req.sink);
  } else {
    sub = get.error();
  }
  route(self, ticket, session_of(*params), std::move(sub), true);
}

/// A bulk transfer's begin or end, in its session; answered typed.
void open_transfer(self_ptr self, transfer_request& req) {
  auto ticket = track(self, std::move(req.answer));
  std::visit(
      [&](auto& step) {
        // The ids checked as any request's are, with the same words.
        json::object ids{{"agent_id", step.session.agent_id},
                         {"session_id", step.session.session_id}};
        using step_t = std::decay_t<decltype(step)>;
        route(self, ticket, session_of(ids), expected<step_t>{std::move(step)});
      },
      req.step);
}

} // namespace allox::rpc_detail
