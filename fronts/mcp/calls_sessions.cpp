// SPDX-License-Identifier: Apache-2.0
// The session tools: create, list, delete, fork and roll back, as
// session.create, agent.list + session.list, session.delete, session.fork
// and session.rollback.
#include "fronts/mcp/calls.hpp"

#include "messages/commands/lists.hpp"
#include "messages/ids.hpp"
#include "messages/results/checkpoints_json.hpp"
#include "messages/results/sessions_json.hpp"

#include <memory>

namespace allox::mcp {

namespace {

constexpr std::string_view origin = "mcp";

/// The daemon's session view with the tool's `session` first.
json::object with_session(const session_ref& ref, json::object v) {
  json::object out{{"session", session_key(ref.agent_id, ref.session_id)}};
  for (auto& kv : v)
    out[kv.key()] = std::move(kv.value());
  return out;
}

/// Sends `c` to AGENTS; `ok` gets its result.
template <class Command, class OnOk>
void to_agents(const tool_call& call, Command c, OnOk ok) {
  call.self->request(call.self->state.init.agents, caf::infinite, std::move(c))
      .then(std::move(ok),
            [failed = call.failed](caf::error& err) { failed(err); });
}

/// An agent runs a dev server beside its tests: a session made here takes
/// `max_runs` runs at once (session.configure; 16 unless given).
void create(const tool_call& call) {
  json::object settings{{"max_runs", arg(call, "max_runs")},
                        {"origin", origin}};
  if (settings["max_runs"].is_null())
    settings["max_runs"] = 16;
  auto configure = decoded<cmd::session_configure>(call, settings);
  if (!configure)
    return;
  auto ref = call.session;
  to_agents(call, cmd::session_create{ref, std::string{origin}},
            [call, ref, c = std::move(*configure)](session_view& v) {
              auto made = with_session(ref, to_json(v));
              if (!call.self->state.init.execution)
                return call.done(std::move(made));
              to_session(call, c, [call, made](settings_view&) mutable {
                call.done(std::move(made));
              });
            });
}

/// Every agent's sessions, or one agent's.
void list(const tool_call& call) {
  auto agent = arg(call, "agent");
  auto all = std::make_shared<json::array>();
  auto of_agent = [call, all](std::string id, std::function<void()> next) {
    to_agents(call, cmd::session_list{id}, [all, id, next](session_ids& v) {
      for (const auto& s : v.ids)
        all->emplace_back(session_key(id, s));
      next();
    });
  };
  auto finish = [call, all] {
    call.done(json::object{{"sessions", std::move(*all)}});
  };
  if (agent.is_string()) {
    if (auto err = validate_id("agent", agent.as_string()))
      return call.failed(err);
    return of_agent(std::string{agent.as_string()}, finish);
  }
  to_agents(call, cmd::agent_list{}, [of_agent, finish](agent_ids& v) {
    // One agent after the other: their order is the list's.
    auto ids = std::make_shared<std::vector<std::string>>(std::move(v.ids));
    auto step = std::make_shared<std::function<void(size_t)>>();
    *step = [ids, of_agent, finish, step](size_t i) {
      if (i == ids->size()) {
        finish();
        *step = nullptr; // breaks the cycle
        return;
      }
      of_agent((*ids)[i], [step, i] { (*step)(i + 1); });
    };
    (*step)(0);
  });
}

void remove(const tool_call& call) {
  if (!confirmed(call, "session_delete"))
    return;
  auto ref = call.session;
  to_agents(call, cmd::session_delete_request{ref, std::string{origin}},
            [call, ref](session_deleted&) {
              call.done(json::object{
                  {"session", session_key(ref.agent_id, ref.session_id)},
                  {"deleted", true}});
            });
}

void fork(const tool_call& call) {
  auto named = arg(call, "new_session");
  if (!named.is_string())
    return call.failed(
        make_error(errc::invalid_argument, "new_session is required"));
  std::string id{named.as_string()};
  if (auto slash = id.find('/'); slash != std::string::npos) {
    if (id.substr(0, slash) != call.session.agent_id)
      return call.failed(
          make_error(errc::invalid_argument,
                     "a fork stays with its agent: new_session must be " +
                         call.session.agent_id + "/ID or ID"));
    id = id.substr(slash + 1);
  }
  json::object p{{"agent_id", call.session.agent_id},
                 {"session_id", call.session.session_id},
                 {"new_session_id", id},
                 {"origin", origin}};
  if (auto cp = arg(call, "checkpoint_id"); !cp.is_null())
    p["checkpoint_id"] = cp;
  auto c = decoded<cmd::session_fork>(call, p);
  if (!c)
    return;
  c->session = call.session;
  session_ref made{call.session.agent_id, id};
  to_agents(call, std::move(*c), [call, made](session_forked& v) {
    call.done(with_session(made, to_json(v)));
  });
}

/// Rolls back once it is allowed: confirmed, or a pre-rollback checkpoint
/// keeps what it replaces.
void rollback(const tool_call& call) {
  json::object p{{"checkpoint_id", arg(call, "checkpoint_id")},
                 {"origin", origin}};
  auto c = decoded<cmd::session_rollback>(
      call, p, false, call.self->state.init.kill_on_rollback);
  if (!c)
    return;
  auto go = [call, c = std::move(*c)] {
    to_session(call, c, [call](rollback_result& r) {
      auto out = to_json(r);
      // The tool's stable subset leads; the daemon's fields follow.
      json::object structured{{"checkpoint_id", r.checkpoint_id}};
      if (r.pre_rollback_checkpoint_id)
        structured["pre_rollback_checkpoint_id"] =
            *r.pre_rollback_checkpoint_id;
      for (auto& kv : out)
        if (!structured.contains(kv.key()))
          structured[kv.key()] = std::move(kv.value());
      call.done(std::move(structured));
    });
  };
  auto confirm = arg(call, "confirm");
  if (confirm.is_bool() && confirm.as_bool())
    return go();
  to_session(call, cmd::policy_get{}, [call, go](policy_view& v) {
    if (v.effective().keep_pre_rollback)
      return go();
    confirmed(call, "session_rollback without a kept pre-rollback "
                    "checkpoint (policy keep_pre_rollback)");
  });
}

} // namespace

void call_sessions(tool_call call) {
  switch (call.tool->id) {
  case tool_id::session_create:
    return create(call);
  case tool_id::session_list:
    return list(call);
  case tool_id::session_delete:
    return remove(call);
  case tool_id::session_fork:
    return fork(call);
  default:
    return rollback(call);
  }
}

} // namespace allox::mcp
