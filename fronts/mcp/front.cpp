// SPDX-License-Identifier: Apache-2.0
// The MCP actor: the Streamable HTTP transport's checks, JSON-RPC, the
// protocol's own methods, and each tool call's result, audit and progress.
#include "fronts/mcp/calls.hpp"
#include "fronts/mcp/jsonrpc.hpp"
#include "fronts/query.hpp"

#include "actors/dump.hpp"
#include "actors/failures.hpp"
#include "guest/http/server.hpp"
#include "guest/os/fs.hpp"
#include "messages/ids.hpp"
#include "messages/records.hpp"

#include <caf/send.hpp>

#include <chrono>
#include <memory>

#ifndef ALLOX_VERSION
#error "ALLOX_VERSION must name the project's version"
#endif

namespace allox::mcp {

namespace bhttp = boost::beast::http;

namespace {

// -- one HTTP exchange --------------------------------------------------------

/// The answers to one POST: one per request of the body, in order.
struct exchange {
  explicit exchange(http::responder a) : answer(std::move(a)) {}
  http::responder answer;
  bool batch = false;
  /// Answered as an SSE stream (a call reporting progress).
  bool sse = false;
  /// A reply per message; null for notifications and responses.
  std::vector<json::value> replies;
  size_t pending = 0;

  static std::string event(const json::object& msg) {
    return "event: message\ndata: " + json::serialize(msg) + "\n\n";
  }

  void reply(size_t i, json::object msg) {
    replies[i] = std::move(msg);
    if (--pending == 0)
      finish();
  }

  void finish() {
    if (sse) {
      answer.more(event(replies.front().as_object()), true);
      return;
    }
    json::array out;
    for (auto& r : replies)
      if (!r.is_null())
        out.push_back(std::move(r));
    if (out.empty())
      return answer({202, "application/json", "", {}});
    auto body = batch ? json::serialize(out) : json::serialize(out.front());
    answer({200, "application/json", std::move(body), {}});
  }
};

using exchange_ptr = std::shared_ptr<exchange>;

void answer_http_error(const http::responder& r, int status, int c,
                       std::string message) {
  r({status,
     "application/json",
     json::serialize(error(nullptr, {c, std::move(message)})),
     {}});
}

std::string header(const http::route_request& req, std::string_view name) {
  auto it = req.find(boost::beast::string_view{name.data(), name.size()});
  return it == req.end() ? std::string{}
                         : std::string{it->value().data(), it->value().size()};
}

/// The host of an Origin or Host value, without scheme, port or brackets.
std::string host_of(std::string_view v) {
  if (auto scheme = v.find("://"); scheme != std::string_view::npos)
    v.remove_prefix(scheme + 3);
  v = v.substr(0, v.find('/'));
  if (!v.empty() && v.front() == '[')
    return std::string{v.substr(1, v.find(']') - 1)};
  return std::string{v.substr(0, v.find(':'))};
}

/// A browser's request must come from a page of this host (or of
/// loopback): the spec's guard against DNS rebinding. Requests without an
/// Origin (every non-browser client) pass.
bool origin_allowed(const http::route_request& req) {
  auto origin = header(req, "Origin");
  if (origin.empty())
    return true;
  auto host = host_of(origin);
  return host == "localhost" || host == "127.0.0.1" || host == "::1" ||
         host == host_of(header(req, "Host"));
}

/// A query parameter of the endpoint (agent, session).
std::string query_param(const http::route_request& req, std::string_view name) {
  std::string_view target{req.target().data(), req.target().size()};
  auto q = target.find('?');
  return q == std::string_view::npos
             ? std::string{}
             : fronts::query_param(target.substr(q + 1), name);
}

/// Where a call's session comes from when its arguments name none.
struct endpoint {
  std::string agent;
  session_ref fallback;
};

// -- tool calls ---------------------------------------------------------------

json::object tool_error(const caf::error& err) {
  auto text = json::serialize(json::object{{"error", message_of(err)},
                                           {"code", code_name(code_of(err))}});
  return json::object{
      {"content", json::array{json::object{{"type", "text"}, {"text", text}}}},
      {"isError", true}};
}

json::object tool_result(json::object structured) {
  auto text = json::serialize(structured);
  return json::object{
      {"content", json::array{json::object{{"type", "text"}, {"text", text}}}},
      {"structuredContent", std::move(structured)},
      {"isError", false}};
}

/// The session an argument names: AGENT/SESSION, or a bare id of the
/// endpoint's agent.
expected<session_ref> session_named(const std::string& named,
                                    const endpoint& ep) {
  session_ref ref;
  auto slash = named.find('/');
  if (slash == std::string::npos) {
    ref = {ep.agent, named};
  } else {
    ref = {named.substr(0, slash), named.substr(slash + 1)};
  }
  if (auto err = validate_id("agent", ref.agent_id))
    return err;
  if (auto err = validate_id("session", ref.session_id))
    return err;
  return ref;
}

/// Every tool call leaves an audit record (origin mcp), beside the records
/// of the changes it made.
void audit_call(front_self self, const tool_def& tool, const session_ref& ref,
                const caf::error& err) {
  json::object fields{
      {"origin", "mcp"},
      {"tool", json::string_view{tool.name.data(), tool.name.size()}},
      {"ok", !err}};
  if (err)
    fields["code"] = code_name(code_of(err));
  metadata_write w;
  w.durable = false;
  w.audit.push_back({os::now_ns(), "mcp.call", ref.agent_id, ref.session_id,
                     json::serialize(fields)});
  caf::anon_send(self->state.init.metadata, atom::write_v, std::move(w));
}

void dispatch(tool_call call) {
  switch (group_of(call.tool->id)) {
  case tool_group::sessions:
    return call_sessions(std::move(call));
  case tool_group::commands:
    return call_commands(std::move(call));
  case tool_group::files:
    break;
  }
  call_files(std::move(call));
}

/// The progress token of a tools/call (its `_meta.progressToken`), or
/// null: the client wants progress notifications only when it gave one.
const json::value* progress_token(const message& msg) {
  if (msg.method != "tools/call")
    return nullptr;
  auto* meta = msg.params.if_contains("_meta");
  if (meta == nullptr || !meta->is_object())
    return nullptr;
  return meta->as_object().if_contains("progressToken");
}

/// tools/call: the tool's result (an error of the tool is a result too,
/// with isError) through `reply`.
void call_tool(front_self self, const message& msg, const endpoint& ep,
               const exchange_ptr& ex,
               std::function<void(json::object)> reply) {
  auto* name = msg.params.if_contains("name");
  if (name == nullptr || !name->is_string())
    return reply(error(msg.id, {code::invalid_params, "name is required"}));
  const auto* tool = find_tool(std::string_view{name->as_string()});
  if (tool == nullptr)
    return reply(
        error(msg.id, {code::invalid_params,
                       "unknown tool: " + std::string{name->as_string()}}));
  json::object args;
  if (auto* a = msg.params.if_contains("arguments"); a && !a->is_null()) {
    if (!a->is_object())
      return reply(
          error(msg.id, {code::invalid_params, "arguments must be an object"}));
    args = a->as_object();
  }
  auto& st = self->state;
  ++st.tool_calls;
  ++st.pending;
  tool_call call;
  call.self = self;
  call.tool = tool;
  call.args = std::move(args);
  auto id = msg.id;
  auto finish = [self, reply, id](json::object result, bool failed) {
    --self->state.pending;
    if (failed)
      ++self->state.tool_errors;
    reply(success(id, std::move(result)));
  };
  auto session = call.args.if_contains("session");
  caf::error bad;
  if (session != nullptr && !session->is_null()) {
    if (!session->is_string())
      bad = make_error(errc::invalid_argument,
                       "session must be a string AGENT/SESSION");
    else if (auto ref = session_named(std::string{session->as_string()}, ep))
      call.session = *ref;
    else
      bad = ref.error();
  } else if (tool->per_session) {
    if (ep.fallback.session_id.empty())
      bad = make_error(errc::invalid_argument,
                       "session is required (AGENT/SESSION), or open the "
                       "endpoint as /mcp?agent=A&session=S");
    else
      call.session = ep.fallback;
  }
  if (!bad && group_of(tool->id) == tool_group::commands && !st.init.execution)
    bad = make_error(errc::unsupported,
                     "this daemon runs no processes (started without "
                     "--process-audit-root)");
  auto ids = call.session;
  call.done = [self, finish, tool, ids](json::object structured) {
    audit_call(self, *tool, ids, caf::none);
    finish(tool_result(std::move(structured)), false);
  };
  call.failed = [self, finish, tool, ids](const caf::error& err) {
    audit_call(self, *tool, ids, err);
    finish(tool_error(err), true);
  };
  if (bad)
    return call.failed(bad);
  // Progress, when the client asked for it: SSE events on this exchange.
  if (const auto* token = progress_token(msg); token != nullptr && ex->sse)
    call.progress = [ex, token = *token](double done, double total,
                                         std::string text) {
      json::object p{{"progressToken", token}, {"progress", done}};
      if (total > 0)
        p["total"] = total;
      if (!text.empty())
        p["message"] = std::move(text);
      ex->answer.more(
          exchange::event(notification("notifications/progress", p)));
    };
  dispatch(std::move(call));
}

json::object initialize_result(const message& msg) {
  std::string asked;
  if (auto* v = msg.params.if_contains("protocolVersion");
      v != nullptr && v->is_string())
    asked = std::string{v->as_string()};
  return json::object{
      {"protocolVersion", negotiate(asked)},
      {"capabilities",
       json::object{{"tools", json::object{{"listChanged", false}}}}},
      {"serverInfo", json::object{{"name", "allox-os"},
                                  {"title", "Allox OS"},
                                  {"version", ALLOX_VERSION}}},
      {"instructions",
       "Each tool acts on one Allox OS session (its own workspace, "
       "processes and checkpoints), named by `session` as AGENT/SESSION. "
       "Checkpoint before risky changes; checkpoint_diff shows what "
       "changed and session_rollback puts files back. Long commands: "
       "command_start, then command_output with the cursor it returns."}};
}

/// One request's answer through `reply`.
void answer_request(front_self self, const message& msg, const endpoint& ep,
                    const exchange_ptr& ex,
                    std::function<void(json::object)> reply) {
  if (msg.method == "initialize")
    return reply(success(msg.id, initialize_result(msg)));
  if (msg.method == "ping")
    return reply(success(msg.id, json::object{}));
  if (msg.method == "tools/list") {
    json::array tools;
    bool fallback = !ep.fallback.session_id.empty();
    for (const auto& t : catalog())
      tools.push_back(to_json(t, fallback));
    return reply(success(msg.id, json::object{{"tools", std::move(tools)}}));
  }
  if (msg.method == "tools/call")
    return call_tool(self, msg, ep, ex, std::move(reply));
  ++self->state.protocol_errors;
  reply(error(msg.id,
              {code::method_not_found, "method not found: " + msg.method}));
}

void serve(front_self self, mcp_call& call) {
  auto& st = self->state;
  ++st.requests;
  const auto& req = call.request;
  const auto& answer = call.answer;
  if (!origin_allowed(req)) {
    ++st.protocol_errors;
    return answer_http_error(answer, 403, code::invalid_request,
                             "Origin " + header(req, "Origin") +
                                 " may not call this server");
  }
  auto version = header(req, "MCP-Protocol-Version");
  if (!version.empty() && !supported(version)) {
    ++st.protocol_errors;
    return answer_http_error(answer, 400, code::invalid_request,
                             "unsupported MCP-Protocol-Version " + version);
  }
  auto type = header(req, "Content-Type");
  if (!type.empty() && type.find("application/json") == std::string::npos) {
    ++st.protocol_errors;
    return answer_http_error(answer, 415, code::invalid_request,
                             "Content-Type must be application/json");
  }
  auto accept = header(req, "Accept");
  if (!accept.empty() && accept.find("application/json") == std::string::npos &&
      accept.find("*/*") == std::string::npos) {
    ++st.protocol_errors;
    return answer_http_error(answer, 406, code::invalid_request,
                             "Accept must include application/json");
  }
  endpoint ep;
  ep.agent = query_param(req, "agent");
  auto fallback = query_param(req, "session");
  if (ep.agent.empty())
    ep.agent = st.init.default_agent;
  if (auto err = validate_id("agent", ep.agent))
    return answer_http_error(answer, 400, code::invalid_request,
                             message_of(err));
  if (!fallback.empty()) {
    if (auto err = validate_id("session", fallback))
      return answer_http_error(answer, 400, code::invalid_request,
                               message_of(err));
    ep.fallback = {ep.agent, fallback};
  }
  bool batch = false;
  auto messages = decode_body(req.body(), batch);
  // A body that is no JSON-RPC at all is the transport's error.
  if (!batch && messages.front().failed &&
      (messages.front().error.code == code::parse_error ||
       messages.front().error.code == code::invalid_request)) {
    ++st.protocol_errors;
    return answer(
        {400,
         "application/json",
         json::serialize(error(messages.front().id, messages.front().error)),
         {}});
  }
  auto ex = std::make_shared<exchange>(answer);
  ex->batch = batch;
  ex->replies.resize(messages.size());
  ex->pending = messages.size() + 1; // +1: held until every one started
  if (!batch && messages.front().request &&
      progress_token(messages.front()) != nullptr) {
    ex->sse = true;
    http::route_response head{
        200, "text/event-stream", "", {{"Cache-Control", "no-cache"}}};
    head.streaming = true;
    answer(std::move(head));
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    auto& msg = messages[i];
    if (msg.failed) {
      ++st.protocol_errors;
      ex->reply(i, error(msg.id, msg.error));
    } else if (!msg.request) {
      --ex->pending; // a notification or a response: nothing to answer
    } else {
      answer_request(self, msg, ep, ex,
                     [ex, i](json::object r) { ex->reply(i, std::move(r)); });
    }
  }
  if (--ex->pending == 0)
    ex->finish();
}

} // namespace

// -- helpers of the groups ----------------------------------------------------

std::string native_path(std::string_view p) {
  constexpr std::string_view root = "/workspace";
  if (p == root)
    return {};
  if (p.size() > root.size() && p.compare(0, root.size(), root) == 0 &&
      p[root.size()] == '/')
    return std::string{p.substr(root.size() + 1)};
  return std::string{p};
}

json::value arg(const tool_call& call, std::string_view name) {
  auto* v = call.args.if_contains(name);
  return v == nullptr ? json::value(nullptr) : *v;
}

bool confirmed(const tool_call& call, std::string_view what) {
  auto c = arg(call, "confirm");
  if (c.is_bool() && c.as_bool())
    return true;
  call.failed(make_error(errc::invalid_argument,
                         std::string{what} +
                             " is destructive: call again with confirm: true"));
  return false;
}

mcp_actor::behavior_type front(front_self self, front_init init) {
  self->state.init = std::move(init);
  self->state.sessions.agents = self->state.init.agents;
  self->state.started = std::chrono::steady_clock::now();
  self->set_down_handler(
      [self](caf::down_msg& dm) { self->state.sessions.forget(dm.source); });
  self->set_exception_handler(
      [](std::exception_ptr& ep) { return actor_failed(ep, "mcp", ""); });
  return {
      [self](mcp_call& call) { serve(self, call); },
      [self](atom::stats) {
        auto& st = self->state;
        actor_stats s;
        s.kind = "mcp";
        s.top()
            .fact("state", st.pending == 0 ? "idle" : "busy")
            .gauge("mailbox", self->mailbox().size());
        s.group("counters")
            .counter("requests", st.requests)
            .counter("tool_calls", st.tool_calls)
            .counter("tool_errors", st.tool_errors)
            .counter("protocol_errors", st.protocol_errors)
            .gauge("pending_calls", st.pending);
        s.top().gauge("uptime_ms", uptime_ms(st.started));
        return s;
      },
  };
}

void serve_mcp(http::server& srv, std::function<mcp_actor()> get) {
  auto post = [get](const http::route_request& req, http::responder answer) {
    auto actor = get();
    if (!actor)
      return answer_http_error(answer, 503, code::internal_error,
                               "the daemon is starting");
    caf::anon_send(actor, mcp_call{req, std::move(answer)});
  };
  // Stateless: no stream of the server's own to GET, no protocol session
  // to DELETE.
  auto not_allowed = [](const http::route_request&, http::responder answer) {
    answer({405,
            "application/json",
            json::serialize(error(nullptr, {code::invalid_request,
                                            "this MCP server is stateless: "
                                            "POST /mcp only"})),
            {{"Allow", "POST"}}});
  };
  srv.add_route({bhttp::verb::post, "/mcp", http::route_match::exact,
                 http::route_access::token, post});
  for (auto m : {bhttp::verb::get, bhttp::verb::delete_})
    srv.add_route({m, "/mcp", http::route_match::exact,
                   http::route_access::token, not_allowed});
}

} // namespace allox::mcp
