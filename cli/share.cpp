// SPDX-License-Identifier: Apache-2.0
// alloxctl share: session-to-session sharing (share.*) as the current
// session: its own policy (status, enable, disable) and the files of a
// target session that shares with it (list, read, write). A target is
// AGENT/SESSION; read and write move the file's bytes, base64 only on the
// wire.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>
#include <boost/beast/core/detail/base64.hpp>

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace allox::ctl {

namespace {

namespace b64 = boost::beast::detail::base64;

struct share_args {
  std::string target;
  std::string path;
  std::string scope;
  std::string permission;
  std::string origin;
  std::string data;
  std::string from;
  std::string to;
};

/// The caller's ids and the daemon, plus the target's ids from
/// AGENT/SESSION (when `target` is given).
result<app_state::session_call_t> call_for(app_state& st,
                                           const std::string& target) {
  auto call = st.session_call();
  if (!call || target.empty())
    return call;
  auto slash = target.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == target.size() ||
      target.find('/', slash + 1) != std::string::npos)
    return usage_error("the target must be AGENT/SESSION, not '" + target +
                       "'");
  call->params["target_agent_id"] = target.substr(0, slash);
  call->params["target_session_id"] = target.substr(slash + 1);
  return call;
}

/// One share.* call and its result in the chosen format.
int share_call(app_state& st, const std::string& action,
               const std::string& target, json::object extra,
               table_view view = view_generic) {
  auto call = call_for(st, target);
  if (!call)
    return report(call.error());
  for (auto& kv : extra)
    call->params[kv.key()] = std::move(kv.value());
  auto r = call->daemon->rpc(action, call->params);
  if (!r)
    return report(r.error());
  print_result(*st.out, st.st, *r, [&] { view(*r, *st.out, st.st); });
  return exit_ok;
}

/// share.list's entries as a table.
void view_entries(const json::value& v, std::ostream& out, const style& st) {
  const auto* entries =
      v.is_object() ? v.get_object().if_contains("entries") : nullptr;
  if (entries == nullptr || !entries->is_array())
    return view_generic(v, out, st);
  std::vector<const json::object*> rows;
  for (const auto& e : entries->get_array())
    if (e.is_object())
      rows.push_back(&e.get_object());
  print_table(out, st,
              {col("NAME", "name"), col("TYPE", "type"), col("SIZE", "size")},
              rows);
}

/// share.read: the file's bytes (table output) to stdout or --to; the
/// result itself in json/yaml.
int read_command(app_state& st, const share_args& a) {
  auto call = call_for(st, a.target);
  if (!call)
    return report(call.error());
  call->params["path"] = a.path;
  auto r = call->daemon->rpc("share.read", call->params);
  if (!r)
    return report(r.error());
  if (st.st.format != output_format::table) {
    print_result(*st.out, st.st, *r, [] {});
    return exit_ok;
  }
  const auto* data =
      r->is_object() ? r->get_object().if_contains("data_base64") : nullptr;
  std::string text = data && data->is_string() ? std::string{data->get_string()}
                                               : std::string{};
  std::string bytes(b64::decoded_size(text.size()), '\0');
  bytes.resize(b64::decode(bytes.data(), text.data(), text.size()).first);
  if (a.to.empty()) {
    st.out->write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    st.out->flush();
    return exit_ok;
  }
  std::ofstream out{a.to, std::ios::binary};
  if (!(out << bytes) || !out.flush())
    return report(usage_error("cannot write " + a.to));
  return exit_ok;
}

/// share.write: --data, the file --from, or stdin.
int write_command(app_state& st, const share_args& a) {
  std::string bytes = a.data;
  if (!a.from.empty()) {
    std::ifstream in{a.from, std::ios::binary};
    if (!in)
      return report(usage_error("cannot read " + a.from));
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  } else if (a.data.empty()) {
    bytes.assign(std::istreambuf_iterator<char>(std::cin), {});
  }
  std::string text(b64::encoded_size(bytes.size()), '\0');
  text.resize(b64::encode(text.data(), bytes.data(), bytes.size()));
  return share_call(st, "share.write", a.target,
                    {{"path", a.path}, {"data_base64", text}});
}

} // namespace

void add_share_commands(CLI::App& app, app_state& st,
                        std::function<int()>* run) {
  static share_args a;
  auto* st_cmd = subcommand(app, {"share", "status"},
                            "the session's share policy (share.status)");
  st_cmd->callback([&st, run] {
    *run = [&st] {
      return share_call(st, "share.status", {}, {});
    };
  });

  auto* enable = subcommand(app, {"share", "enable"},
                            "let sessions that share too reach this "
                            "session's files (share.enable)");
  enable->add_option("--scope", a.scope,
                     "the directory others reach (default: all)");
  enable->add_option("--permission", a.permission, "read (default) or write");
  enable->add_option("--origin", a.origin, "recorded in the audit trail");
  enable->callback([&st, run] {
    *run = [&st] {
      json::object p;
      if (!a.scope.empty())
        p["scope"] = a.scope;
      if (!a.permission.empty())
        p["permission"] = a.permission;
      if (!a.origin.empty())
        p["origin"] = a.origin;
      return share_call(st, "share.enable", {}, std::move(p));
    };
  });

  auto* disable = subcommand(app, {"share", "disable"},
                             "stop sharing; scope and permission are kept "
                             "(share.disable)");
  disable->add_option("--origin", a.origin, "recorded in the audit trail");
  disable->callback([&st, run] {
    *run = [&st] {
      json::object p;
      if (!a.origin.empty())
        p["origin"] = a.origin;
      return share_call(st, "share.disable", {}, std::move(p));
    };
  });

  auto* list = subcommand(app, {"share", "list"},
                          "a directory of another session's scope "
                          "(share.list)");
  list->add_option("TARGET", a.target, "AGENT/SESSION")->required();
  list->add_option("PATH", a.path, "in the target's scope (default: .)");
  list->callback([&st, run] {
    *run = [&st] {
      json::object p;
      if (!a.path.empty())
        p["path"] = a.path;
      return share_call(st, "share.list", a.target, std::move(p), view_entries);
    };
  });

  auto* read = subcommand(app, {"share", "read"},
                          "print a file of another session's scope "
                          "(share.read)");
  read->add_option("TARGET", a.target, "AGENT/SESSION")->required();
  read->add_option("PATH", a.path, "in the target's scope")->required();
  read->add_option("--to", a.to, "write the bytes to this file");
  read->callback([&st, run] {
    *run = [&st] {
      return read_command(st, a);
    };
  });

  auto* write = subcommand(app, {"share", "write"},
                           "replace a file of another session's scope, "
                           "at most 256 KiB (share.write)");
  write->add_option("TARGET", a.target, "AGENT/SESSION")->required();
  write->add_option("PATH", a.path, "in the target's scope")->required();
  write->add_option("--data", a.data, "the content (default: stdin)");
  write->add_option("--from", a.from, "the content from this file");
  write->callback([&st, run] {
    *run = [&st] {
      return write_command(st, a);
    };
  });
}

} // namespace allox::ctl
