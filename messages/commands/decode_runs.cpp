// SPDX-License-Identifier: Apache-2.0
// Decoders of the session.configure, network.* and process.* commands
// (messages/commands/runs.hpp, network.hpp).
#include "messages/commands/network.hpp"
#include "messages/commands/runs.hpp"

#include <algorithm>
#include <cctype>

namespace allox::cmd {

namespace {

caf::error invalid(std::string msg) {
  return make_error(errc::invalid_argument, std::move(msg));
}

/// {rows, cols}, each 1..1000, as a terminal's size.
expected<terminal_size> decode_terminal_size(const json::value& v,
                                             const char* what) {
  auto bad = [what] {
    return invalid(std::string{what} +
                   " must be {rows, cols} with each 1..1000");
  };
  if (!v.is_object())
    return bad();
  const auto& o = v.as_object();
  auto* rows = o.if_contains("rows");
  auto* cols = o.if_contains("cols");
  if (!rows || !cols || !rows->is_int64() || !cols->is_int64())
    return bad();
  auto r = rows->as_int64();
  auto c = cols->as_int64();
  if (r < 1 || r > 1000 || c < 1 || c > 1000)
    return bad();
  return terminal_size{static_cast<uint16_t>(r), static_cast<uint16_t>(c)};
}

/// An absolute, normalised path of at most 4096 bytes: no empty, . or ..
/// component, no NUL.
bool sandbox_path(const std::string& p) {
  if (p.empty() || p[0] != '/' || p.size() > 4096 ||
      p.find('\0') != std::string::npos)
    return false;
  size_t at = 1;
  while (at <= p.size()) {
    auto end = p.find('/', at);
    if (end == std::string::npos)
      end = p.size();
    auto part = p.substr(at, end - at);
    if ((part.empty() && end != p.size()) || part == "." || part == "..")
      return false;
    at = end + 1;
  }
  return true;
}

/// /home/<name>, the name of the kind a user name has.
bool home_path(const std::string& p) {
  constexpr std::string_view prefix = "/home/";
  if (p.compare(0, prefix.size(), prefix) != 0)
    return false;
  auto name = p.substr(prefix.size());
  if (name.empty() || name.size() > 32 || name == "." || name == "..")
    return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' ||
           ch == '_' || ch == '-';
  });
}

/// The most process.input takes at once.
constexpr size_t max_input_bytes = 65536;

/// A network mode, case- and space-insensitive as the prototype's; empty
/// when it is none of the three.
std::string network_mode(const json::value& v) {
  std::string mode = v.is_string() ? std::string{v.get_string()} : "";
  mode.erase(std::remove_if(mode.begin(), mode.end(), ::isspace), mode.end());
  std::transform(mode.begin(), mode.end(), mode.begin(), ::tolower);
  if (mode != "inherit" && mode != "isolated" && mode != "proxy")
    return {};
  return mode;
}

/// egress {allow?: [rule], deny?: [rule]}; the rules' syntax is the
/// session's to check (guest/net/egress_rules.hpp).
caf::error decode_egress(const json::value& v, session_configure& c) {
  c.has_egress = true;
  if (v.is_null())
    return caf::none;
  if (!v.is_object())
    return invalid("egress must be an object {allow, deny}");
  for (const auto& kv : v.as_object())
    if (kv.key() != "allow" && kv.key() != "deny")
      return invalid("egress has only allow and deny, not " +
                     std::string{kv.key()});
  for (auto [key, into] : {std::pair{"allow", &c.egress_allow},
                           std::pair{"deny", &c.egress_deny}}) {
    const auto* list = v.as_object().if_contains(key);
    if (list == nullptr || list->is_null())
      continue;
    if (!list->is_array())
      return invalid(std::string{"egress."} + key + " must be a list of rules");
    if (list->as_array().size() > max_egress_rules)
      return invalid(std::string{"egress."} + key + " has more than " +
                     std::to_string(max_egress_rules) + " rules");
    for (const auto& r : list->as_array()) {
      if (!r.is_string() || r.get_string().empty() ||
          r.get_string().size() > 300)
        return invalid(std::string{"egress."} + key +
                       " rules are strings like host:443");
      into->emplace_back(r.get_string());
    }
  }
  return caf::none;
}

/// limits {file: value | null}: each value is checked by the session,
/// which names the control file it refuses.
void decode_limits(const json::object& l, session_configure& c) {
  c.has_limits = true;
  for (const auto& kv : l) {
    limit_change change;
    change.name = std::string{kv.key()};
    const auto& v = kv.value();
    if (v.is_null())
      change.clear = true;
    else if (v.is_string())
      change.value = std::string{v.get_string()};
    else if (v.is_int64() && v.get_int64() > 0)
      change.value = std::to_string(v.get_int64());
    c.limits.push_back(std::move(change));
  }
}

/// argv: a nonempty array of strings without NUL, the first nonempty.
bool decode_argv(const json::value* argv, std::vector<std::string>& out) {
  if (argv == nullptr || !argv->is_array() || argv->as_array().empty())
    return false;
  for (const auto& a : argv->as_array()) {
    if (!a.is_string())
      return false;
    std::string s{a.get_string()};
    if (s.find('\0') != std::string::npos)
      return false;
    out.push_back(std::move(s));
  }
  return !out.front().empty();
}

/// env: names without '=' or NUL, string values without NUL.
bool decode_env(const json::value& env,
                std::map<std::string, std::string>& out) {
  if (!env.is_object())
    return false;
  for (const auto& kv : env.as_object()) {
    std::string k{kv.key()};
    if (k.empty() || k.find('=') != std::string::npos ||
        k.find('\0') != std::string::npos || !kv.value().is_string())
      return false;
    std::string v{kv.value().get_string()};
    if (v.find('\0') != std::string::npos)
      return false;
    out.emplace(std::move(k), std::move(v));
  }
  return true;
}

std::string read_run_id(params::reader& r) {
  return r.required_id("run_id", "run");
}

} // namespace

// -- session.configure and network
// ---------------------------------------------

network_configure network_configure::decode(params::reader& r) {
  network_configure c;
  const auto* m = r.params().if_contains("mode");
  c.change.network = m != nullptr ? network_mode(*m) : "";
  r.check(!c.change.network.empty(),
          "network mode must be inherit, isolated, or proxy");
  c.change.origin = r.origin();
  return c;
}

network_status network_status::decode(params::reader&) {
  return {};
}

session_configure session_configure::decode(params::reader& r) {
  session_configure c;
  const auto& p = r.params();
  c.reset = r.optional_bool("reset", false);
  if (auto* n = p.if_contains("network"); n != nullptr && !n->is_null()) {
    c.network = network_mode(*n);
    r.check(!c.network.empty(), "network must be inherit, isolated or proxy");
  }
  if (auto* e = p.if_contains("egress"); e != nullptr)
    if (auto err = decode_egress(*e, c))
      r.fail(std::move(err));
  if (auto* l = p.if_contains("limits"); l != nullptr && !l->is_null()) {
    r.check(l->is_object(), "limits must be an object");
    if (l->is_object())
      decode_limits(l->get_object(), c);
  }
  if (auto* m = p.if_contains("max_runs"); m != nullptr && !m->is_null()) {
    bool ok = m->is_int64() && m->get_int64() >= 1 &&
              m->get_int64() <= max_runs_limit;
    r.check(ok,
            "max_runs must be an integer 1.." + std::to_string(max_runs_limit));
    if (ok)
      c.max_runs = m->get_int64();
  }
  c.origin = r.origin();
  return c;
}

// -- process.*
// ------------------------------------------------------------------

process_start process_start::decode(params::reader& r) {
  process_start c;
  const auto& p = r.params();
  r.check(decode_argv(p.if_contains("argv"), c.argv),
          "argv must be a nonempty array of nonempty strings");
  if (auto* env = p.if_contains("env"); env != nullptr && !env->is_null())
    r.check(decode_env(*env, c.env),
            "env must be a string mapping with valid environment names");
  if (auto* t = p.if_contains("timeout"); t != nullptr && !t->is_null()) {
    bool number = !t->is_bool() && t->is_number();
    if (number)
      c.timeout = t->to_number<double>();
    // Written so that NaN is refused too.
    r.check(number && c.timeout > 0 && !(c.timeout > max_run_timeout),
            "timeout must be in (0, 86400] seconds");
  }
  c.stdin_pipe = r.optional_bool("stdin", false);
  if (auto* t = p.if_contains("pty"); t != nullptr && !t->is_null()) {
    c.pty = r.take(decode_terminal_size(*t, "pty"));
    // The terminal is the run's stdin.
    c.stdin_pipe = false;
  }
  c.cwd = r.optional_string("cwd");
  r.check(c.cwd.empty() || sandbox_path(c.cwd),
          "cwd must be an absolute path without . or .. components");
  c.home = r.optional_string("home");
  r.check(c.home.empty() || home_path(c.home),
          "home must be /home/<name> with a name of letters, digits, . _ -");
  return c;
}

process_get process_get::decode(params::reader& r) {
  process_get c;
  c.run_id = read_run_id(r);
  return c;
}

process_input process_input::decode(params::reader& r) {
  process_input c;
  c.run_id = read_run_id(r);
  c.data = r.optional_string("data");
  r.check(c.data.size() <= max_input_bytes, "data must be at most 65536 bytes");
  c.eof = r.optional_bool("eof", false);
  return c;
}

process_resize process_resize::decode(params::reader& r) {
  process_resize c;
  c.run_id = read_run_id(r);
  // The size is the parameters' own rows and cols.
  c.size = r.take(decode_terminal_size(json::value(r.params()), "the size"));
  return c;
}

process_list process_list::decode(params::reader& r) {
  process_list c;
  // Paging is optional, as for checkpoint.list.
  c.cursor = r.optional_string("cursor");
  c.limit = r.optional_int("limit", 0);
  r.check(c.limit >= 0 && c.limit <= 10000, "limit must be 1..10000");
  r.check(c.cursor.empty() || c.limit != 0, "cursor needs limit");
  return c;
}

process_stop process_stop::decode(params::reader& r) {
  process_stop c;
  c.run_id = read_run_id(r);
  return c;
}

process_wait process_wait::decode(params::reader& r) {
  process_wait c;
  c.run_id = read_run_id(r);
  c.timeout_ms = r.optional_int("timeout_ms", 30000);
  // Bounded by the daemon's request deadline (300 s by default).
  r.check(c.timeout_ms >= 0 && c.timeout_ms <= 300000,
          "timeout_ms must be 0..300000");
  return c;
}

process_output process_output::decode(params::reader& r) {
  process_output c;
  c.run_id = read_run_id(r);
  c.stream = r.optional_string("stream", "stdout");
  r.check(c.stream == "stdout" || c.stream == "stderr",
          "stream must be stdout or stderr");
  c.offset = r.optional_int("offset", 0);
  c.limit = r.optional_int("limit", 65536);
  r.check(c.offset >= 0 && c.limit >= 1 && c.limit <= (1 << 20),
          "offset must be nonnegative; limit must be 1..1048576");
  return c;
}

process_events process_events::decode(params::reader& r) {
  process_events c;
  c.run_id = read_run_id(r);
  // As the prototype: a wrong type of either is the range message too, so
  // these are read without the reader's "must be an integer".
  auto after = params::optional_int(r.params(), "after", 0);
  auto limit = params::optional_int(r.params(), "limit", 100);
  r.check(after && limit && *after >= 0 && *limit >= 1 && *limit <= 1000,
          "after must be nonnegative; limit must be 1..1000");
  if (after && limit) {
    c.after = *after;
    c.limit = *limit;
  }
  return c;
}

process_tree process_tree::decode(params::reader& r) {
  process_tree c;
  c.run_id = read_run_id(r);
  return c;
}

} // namespace allox::cmd
