// SPDX-License-Identifier: Apache-2.0
// The file and checkpoint tools: each is one file.* or checkpoint.* command
// of the session (file_write with its parents made first, file_remove of a
// directory confirmed first), decoded by the core's decoders from the
// tool's arguments, and its typed result as the daemon's fields.
#include "fronts/mcp/calls.hpp"

#include "messages/commands/checkpoints.hpp"
#include "messages/commands/files.hpp"
#include "messages/results/checkpoints_json.hpp"
#include "messages/results/files_json.hpp"

#include <utility>

namespace allox::mcp {

namespace {

constexpr std::string_view origin = "mcp";

/// Sends `Command`, decoded from `p`, and ends the call with its result's
/// native JSON.
template <class Command>
void simple(const tool_call& call, const json::object& p) {
  auto c = decoded<Command>(call, p);
  if (!c)
    return;
  to_session(call, std::move(*c),
             [call](cmd::reply_t<Command>& r) { call.done(to_json(r)); });
}

/// The tool's `name` argument as a native path (null stays null: the
/// core's decoder says it is missing).
json::value path_arg(const tool_call& call, std::string_view name) {
  auto v = arg(call, name);
  if (v.is_string())
    return json::value(native_path(std::string_view{v.as_string()}));
  return v;
}

/// The `encoding` of the tool (text or base64) as the core's.
json::value encoding(const tool_call& call) {
  auto e = arg(call, "encoding");
  if (e.is_string() && e.as_string() == "text")
    return "utf-8";
  return e.is_null() ? json::value("utf-8") : e;
}

void read(const tool_call& call) {
  json::object p{{"path", path_arg(call, "path")},
                 {"encoding", encoding(call)}};
  for (auto key : {"offset", "limit"})
    if (auto v = arg(call, key); !v.is_null())
      p[key] = v;
  simple<cmd::file_read>(call, p);
}

void write(const tool_call& call) {
  json::object p{{"path", path_arg(call, "path")},
                 {"data", arg(call, "content")},
                 {"encoding", encoding(call)},
                 {"origin", origin}};
  auto c = decoded<cmd::file_write>(call, p);
  if (!c)
    return;
  auto slash = c->path.rfind('/');
  auto parent =
      slash == std::string::npos ? std::string{} : c->path.substr(0, slash);
  auto go = [call, c = std::move(*c)] {
    to_session(call, c, [call](write_result& r) { call.done(to_json(r)); });
  };
  if (parent.empty())
    return go();
  // An agent writes src/new/file.ts without making src/new first.
  cmd::file_mkdir dir;
  dir.path = parent;
  dir.parents = true;
  dir.origin = std::string{origin};
  to_session(call, std::move(dir), [go](mkdir_result&) { go(); });
}

void list(const tool_call& call) {
  auto depth = arg(call, "depth");
  int64_t levels = 1;
  if (!depth.is_null()) {
    if (!depth.is_int64() || depth.as_int64() < 1 || depth.as_int64() > 16)
      return call.failed(
          make_error(errc::invalid_argument, "depth must be 1..16"));
    levels = depth.as_int64();
  }
  json::object p{{"path", path_arg(call, "path")},
                 {"recursive", levels > 1},
                 {"limit", 10000}};
  if (p["path"].is_null())
    p["path"] = "";
  auto c = decoded<cmd::file_list>(call, p);
  if (!c)
    return;
  auto base = c->path;
  to_session(call, std::move(*c), [call, levels, base](dir_page& page) {
    // Deeper levels than asked for are left out.
    auto below = [&base](const std::string& path) {
      auto rest = base.empty() ? path : path.substr(base.size() + 1);
      return static_cast<int64_t>(std::count(rest.begin(), rest.end(), '/')) +
             1;
    };
    auto& entries = page.entries;
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [&](const file_entry& e) {
                                   return below(e.path) > levels;
                                 }),
                  entries.end());
    call.done(to_json(page));
  });
}

void remove(const tool_call& call) {
  json::object p{{"path", path_arg(call, "path")},
                 {"recursive", arg(call, "recursive")},
                 {"origin", origin}};
  if (p["recursive"].is_null())
    p["recursive"] = false;
  auto c = decoded<cmd::file_remove>(call, p);
  if (!c)
    return;
  auto go = [call, c = *c] {
    to_session(call, c, [call](remove_result& r) { call.done(to_json(r)); });
  };
  auto confirm = arg(call, "confirm");
  if (confirm.is_bool() && confirm.as_bool())
    return go();
  // Only a directory needs the confirmation.
  cmd::file_stat s;
  s.path = c->path;
  to_session(call, std::move(s), [call, go](file_entry& e) {
    if (e.kind != file_kind::directory)
      return go();
    confirmed(call, "file_remove of a directory");
  });
}

void checkpoint(const tool_call& call) {
  json::object p{{"origin", origin}};
  for (auto key : {"checkpoint_id", "message"})
    if (auto v = arg(call, key); !v.is_null())
      p[key] = v;
  simple<cmd::checkpoint_create>(call, p);
}

void diff(const tool_call& call) {
  json::object p{{"from", arg(call, "from")}};
  if (auto to = arg(call, "to"); !to.is_null())
    p["to"] = to;
  if (auto w = arg(call, "writers"); !w.is_null())
    p["writers"] = w;
  simple<cmd::checkpoint_diff>(call, p);
}

} // namespace

void call_files(tool_call call) {
  switch (call.tool->id) {
  case tool_id::file_read:
    return read(call);
  case tool_id::file_write:
    return write(call);
  case tool_id::file_list:
    return list(call);
  case tool_id::file_stat:
    return simple<cmd::file_stat>(call, {{"path", path_arg(call, "path")}});
  case tool_id::file_move:
    return simple<cmd::file_move>(call, {{"from", path_arg(call, "from")},
                                         {"to", path_arg(call, "to")},
                                         {"origin", origin}});
  case tool_id::file_remove:
    return remove(call);
  case tool_id::file_search: {
    json::object p{{"path", path_arg(call, "path")}};
    if (p["path"].is_null())
      p["path"] = "";
    for (auto key : {"pattern", "glob", "regex", "limit"})
      if (auto v = arg(call, key); !v.is_null())
        p[key] = v;
    return simple<cmd::file_search>(call, p);
  }
  case tool_id::file_replace: {
    json::object p{{"path", path_arg(call, "path")}, {"origin", origin}};
    for (auto key : {"old_string", "new_string", "expected_count"})
      if (auto v = arg(call, key); !v.is_null())
        p[key] = v;
    return simple<cmd::file_replace>(call, p);
  }
  case tool_id::checkpoint_create:
    return checkpoint(call);
  case tool_id::checkpoint_list:
    return simple<cmd::checkpoint_list>(call, {});
  case tool_id::checkpoint_diff:
    return diff(call);
  default:
    return call.failed(make_error(errc::internal, "no such file tool"));
  }
}

} // namespace allox::mcp
