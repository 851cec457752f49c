// SPDX-License-Identifier: Apache-2.0
// alloxctl mcp: `serve`, the stdio transport of MCP for clients configured
// with a command (each JSON-RPC line on stdin POSTed to the daemon's /mcp,
// each message of the answer, JSON or SSE, written as a line on stdout);
// and `tools` and `call`, a small MCP client of any Streamable HTTP server
// (the daemon's /mcp by default).
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <string>

namespace allox::ctl {

namespace {

constexpr const char* protocol_version = "2025-11-25";

/// An MCP endpoint: a connection and the path of its endpoint.
struct mcp_endpoint {
  std::unique_ptr<client> own;
  client* conn = nullptr;
  std::string target;
};

/// `url` (a whole endpoint URL; one without a path is a daemon, and its
/// /mcp), else the daemon's /mcp; the daemon's opened on the session of
/// --agent/--session (or the context) when `with_session`.
result<mcp_endpoint> endpoint_of(app_state& st, const std::string& url,
                                 bool with_session) {
  mcp_endpoint ep;
  auto daemons = [&] {
    ep.target = "/mcp";
    if (with_session && !st.cfg.agent.value.empty() &&
        !st.cfg.session.value.empty())
      ep.target +=
          "?agent=" + st.cfg.agent.value + "&session=" + st.cfg.session.value;
  };
  if (url.empty()) {
    auto d = st.daemon();
    if (!d)
      return d.error();
    ep.conn = *d;
    daemons();
    return ep;
  }
  auto scheme = url.find("://");
  auto slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  auto where = parse_url(url.substr(0, slash));
  if (!where)
    return where.error();
  ep.own = std::make_unique<client>(std::move(*where), st.cfg.token.value);
  ep.conn = ep.own.get();
  if (slash == std::string::npos || url.substr(slash) == "/")
    daemons();
  else
    ep.target = url.substr(slash);
  return ep;
}

std::string header_of(const http_reply& r, std::string name) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  name = lower(name);
  for (const auto& [k, v] : r.headers)
    if (lower(k) == name)
      return v;
  return {};
}

/// The JSON-RPC messages of an answer: a JSON body (one or a batch), or
/// the data of each SSE event; none for 202.
result<std::vector<json::value>> messages_of(const http_reply& r) {
  std::vector<json::value> out;
  if (r.status == 202)
    return out;
  auto parse = [&out](const std::string& text) -> status {
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    if (ec)
      return failure{exit_unreachable, "the MCP server sent no JSON", {}};
    if (v.is_array())
      for (auto& m : v.as_array())
        out.push_back(std::move(m));
    else
      out.push_back(std::move(v));
    return ok();
  };
  if (header_of(r, "Content-Type").find("text/event-stream") == 0) {
    std::string data;
    size_t at = 0;
    while (at <= r.body.size()) {
      auto end = r.body.find('\n', at);
      if (end == std::string::npos)
        end = r.body.size();
      auto line = r.body.substr(at, end - at);
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      if (line.rfind("data:", 0) == 0) {
        auto d = line.substr(5);
        if (!d.empty() && d.front() == ' ')
          d.erase(0, 1);
        data += (data.empty() ? "" : "\n") + d;
      } else if (line.empty() && !data.empty()) {
        if (auto s = parse(data); !s)
          return s.error();
        data.clear();
      }
      at = end + 1;
    }
    if (!data.empty())
      if (auto s = parse(data); !s)
        return s.error();
    return out;
  }
  if (r.body.empty())
    return out;
  if (auto s = parse(r.body); !s) {
    if (r.status >= 400)
      return failure{exit_daemon_error,
                     "the MCP server answered " + std::to_string(r.status),
                     {}};
    return s.error();
  }
  return out;
}

/// A client session with one MCP server: initialized once, then requests.
class mcp_client {
public:
  explicit mcp_client(mcp_endpoint ep) : ep_(std::move(ep)) {}

  /// initialize, then notifications/initialized.
  status open() {
    auto init =
        request("initialize",
                json::object{{"protocolVersion", protocol_version},
                             {"capabilities", json::object{}},
                             {"clientInfo", json::object{{"name", "alloxctl"},
                                                         {"version", "1"}}}});
    if (!init)
      return init.error();
    if (auto* v = init->as_object().if_contains("protocolVersion"))
      version_ = std::string{v->as_string()};
    auto sent = post(json::object{{"jsonrpc", "2.0"},
                                  {"method", "notifications/initialized"}});
    if (!sent)
      return sent.error();
    return ok();
  }

  /// A request's result, or its error as a failure.
  result<json::value> request(const std::string& method, json::object params) {
    auto id = ++next_id_;
    auto answer = post(json::object{{"jsonrpc", "2.0"},
                                    {"id", id},
                                    {"method", method},
                                    {"params", std::move(params)}});
    if (!answer)
      return answer.error();
    for (auto& m : *answer) {
      auto* o = m.if_object();
      if (o == nullptr || !o->contains("id") || o->at("id") != json::value(id))
        continue; // a notification (progress) on the way
      if (auto* e = o->if_contains("error"))
        return failure{exit_daemon_error,
                       cell(e->as_object().contains("message")
                                ? e->at("message")
                                : json::value("error")),
                       cell(e->as_object().contains("code") ? e->at("code")
                                                            : json::value())};
      if (auto* r = o->if_contains("result"))
        return *r;
    }
    return failure{
        exit_unreachable, "the MCP server did not answer " + method, {}};
  }

private:
  result<std::vector<json::value>> post(const json::object& msg) {
    std::map<std::string, std::string> headers{
        {"Accept", "application/json, text/event-stream"}};
    if (!session_.empty())
      headers["Mcp-Session-Id"] = session_;
    if (!version_.empty())
      headers["MCP-Protocol-Version"] = version_;
    auto r = ep_.conn->post(ep_.target, json::serialize(msg), headers);
    if (!r)
      return r.error();
    if (auto s = header_of(*r, "Mcp-Session-Id"); !s.empty())
      session_ = s;
    if (r->status >= 400 && r->status != 202) {
      auto parsed = messages_of(*r);
      std::string why = "the MCP server answered " + std::to_string(r->status);
      if (parsed && !parsed->empty())
        if (auto* o = (*parsed)[0].if_object())
          if (auto* e = o->if_contains("error"))
            why += ": " + cell(e->as_object().at("message"));
      return failure{exit_daemon_error, why, {}};
    }
    return messages_of(*r);
  }

  mcp_endpoint ep_;
  int64_t next_id_ = 0;
  std::string session_;
  std::string version_;
};

/// The stdio bridge: one message per line each way, until stdin ends.
int serve(app_state& st) {
  auto ep = endpoint_of(st, {}, true);
  if (!ep)
    return report(ep.error());
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto reply = ep->conn->post(
        ep->target, line, {{"Accept", "application/json, text/event-stream"}});
    result<std::vector<json::value>> messages = failure{};
    if (reply)
      messages = messages_of(*reply);
    else
      messages = reply.error();
    if (!messages) {
      // Answer the request (if it was one) so that the client does not
      // wait forever, and go on with the next line.
      boost::system::error_code ec;
      auto sent = json::parse(line, ec);
      if (!ec && sent.is_object() && sent.as_object().contains("id") &&
          sent.as_object().contains("method"))
        std::cout << json::serialize(json::object{
                         {"jsonrpc", "2.0"},
                         {"id", sent.at("id")},
                         {"error",
                          json::object{{"code", -32603},
                                       {"message", messages.error().message}}}})
                  << "\n"
                  << std::flush;
      std::cerr << "alloxctl mcp serve: " << messages.error().message << "\n";
      continue;
    }
    for (const auto& m : *messages)
      std::cout << json::serialize(m) << "\n";
    std::cout << std::flush;
  }
  return exit_ok;
}

int list_tools(app_state& st, const std::string& url) {
  auto ep = endpoint_of(st, url, false);
  if (!ep)
    return report(ep.error());
  mcp_client c{std::move(*ep)};
  if (auto s = c.open(); !s)
    return report(s.error());
  json::array tools;
  json::object params;
  for (;;) {
    auto page = c.request("tools/list", params);
    if (!page)
      return report(page.error());
    const auto& o = page->as_object();
    if (auto* t = o.if_contains("tools"))
      for (const auto& tool : t->as_array())
        tools.push_back(tool);
    auto* next = o.if_contains("nextCursor");
    if (next == nullptr || !next->is_string())
      break;
    params = json::object{{"cursor", *next}};
  }
  print_result(*st.out, st.st, tools, [&] {
    std::vector<json::object> rows;
    for (const auto& t : tools) {
      const auto& o = t.as_object();
      std::string hints;
      if (auto* a = o.if_contains("annotations"); a && a->is_object()) {
        const auto& h = a->as_object();
        auto on = [&h](const char* k) {
          auto* v = h.if_contains(k);
          return v != nullptr && v->is_bool() && v->as_bool();
        };
        hints = on("readOnlyHint")      ? "read-only"
                : on("destructiveHint") ? "destructive"
                                        : "";
      }
      std::string text = o.contains("description")
                             ? std::string{o.at("description").as_string()}
                             : "";
      if (auto dot = text.find(". "); dot != std::string::npos)
        text = text.substr(0, dot + 1);
      rows.push_back(json::object{
          {"name", o.at("name")}, {"hints", hints}, {"description", text}});
    }
    std::vector<const json::object*> ptrs;
    for (const auto& r : rows)
      ptrs.push_back(&r);
    print_table(*st.out, st.st,
                {col("TOOL", "name"), col("HINTS", "hints"),
                 col("DESCRIPTION", "description")},
                ptrs);
  });
  return exit_ok;
}

int call_tool(app_state& st, const std::string& url, const std::string& tool,
              const std::string& args) {
  boost::system::error_code ec;
  auto parsed = json::parse(args.empty() ? "{}" : args, ec);
  if (ec || !parsed.is_object())
    return report(usage_error("--args must be a JSON object"));
  auto ep = endpoint_of(st, url, true);
  if (!ep)
    return report(ep.error());
  mcp_client c{std::move(*ep)};
  if (auto s = c.open(); !s)
    return report(s.error());
  auto r = c.request("tools/call",
                     json::object{{"name", tool}, {"arguments", parsed}});
  if (!r)
    return report(r.error());
  const auto& o = r->as_object();
  auto* is_error = o.if_contains("isError");
  json::value shown = o.contains("structuredContent")
                          ? o.at("structuredContent")
                      : o.contains("content") ? o.at("content")
                                              : json::value();
  if (is_error != nullptr && is_error->is_bool() && is_error->as_bool()) {
    std::string text = "the tool failed";
    if (auto* content = o.if_contains("content");
        content && content->is_array())
      for (const auto& part : content->as_array())
        if (part.as_object().contains("text"))
          text = std::string{part.at("text").as_string()};
    // Our daemon's tool errors are {error, code} as JSON text.
    auto err = json::parse(text, ec);
    if (!ec && err.is_object() && err.as_object().contains("error"))
      return report(failure{exit_daemon_error, cell(err.at("error")),
                            err.as_object().contains("code")
                                ? cell(err.at("code"))
                                : std::string{}});
    return report(failure{exit_daemon_error, text, {}});
  }
  print_result(*st.out, st.st, shown, [&] {
    if (shown.is_object())
      print_fields(*st.out, st.st, shown.as_object());
    else
      *st.out << cell(shown) << "\n";
  });
  return exit_ok;
}

} // namespace

void add_mcp_commands(CLI::App& app, app_state& st, std::function<int()>* run) {
  auto* mcp = app.add_subcommand(
      "mcp", "the Model Context Protocol: serve over stdio, or call a server");
  mcp->require_subcommand(1);
  auto* serve_cmd = mcp->add_subcommand(
      "serve",
      "MCP over stdio for clients configured with a command, bridged to "
      "the daemon's /mcp (--agent/--session or the context: the default "
      "session)");
  serve_cmd->callback([&st, run] {
    *run = [&st] {
      return serve(st);
    };
  });
  auto url = std::make_shared<std::string>();
  auto* tools = mcp->add_subcommand("tools", "the tools of an MCP server");
  tools->add_option("--url", *url,
                    "a Streamable HTTP MCP endpoint, or a daemon's URL for "
                    "its /mcp (default: the daemon's)");
  tools->callback([&st, run, url] {
    *run = [&st, url] {
      return list_tools(st, *url);
    };
  });
  auto name = std::make_shared<std::string>();
  auto args = std::make_shared<std::string>();
  auto* call = mcp->add_subcommand("call", "calls one tool of an MCP server");
  call->add_option("tool", *name, "the tool's name")->required();
  call->add_option("--args", *args, "its arguments, a JSON object");
  call->add_option("--url", *url,
                   "a Streamable HTTP MCP endpoint, or a daemon's URL for "
                   "its /mcp (default: the daemon's, on the session of "
                   "--agent/--session or the context)");
  call->callback([&st, run, url, name, args] {
    *run = [&st, url, name, args] {
      return call_tool(st, *url, *name, *args);
    };
  });
}

} // namespace allox::ctl
