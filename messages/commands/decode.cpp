// SPDX-License-Identifier: Apache-2.0
#include "messages/commands/decode.hpp"
#include "messages/commands/decode_detail.hpp"

#include "messages/ids.hpp"
#include "messages/params.hpp"

#include <algorithm>
#include <cctype>
#include <type_traits>

namespace allox::cmd {

namespace {

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

/// The most process.input takes at once.
constexpr size_t max_input_bytes = 65536;

} // namespace

// -- checkpoints and rollback -------------------------------------------------

expected<checkpoint_list> decode_checkpoint_list(const json::object& p) {
  checkpoint_list c;
  // Paging is optional: without `limit` the prototype's full list.
  auto cursor = params::optional_string(p, "cursor");
  if (!cursor)
    return cursor.error();
  auto limit = params::optional_int(p, "limit", 0);
  if (!limit)
    return limit.error();
  if (*limit < 0 || *limit > 10000)
    return invalid("limit must be 1..10000");
  c.cursor = std::move(*cursor);
  c.limit = *limit;
  return c;
}

expected<checkpoint_describe>
decode_checkpoint_describe(const json::object& p) {
  auto key = params::required_string(p, "checkpoint_id");
  if (!key)
    return key.error();
  checkpoint_describe c;
  c.checkpoint_id = std::move(*key);
  return c;
}

expected<checkpoint_diff> decode_checkpoint_diff(const json::object& p) {
  checkpoint_diff c;
  auto from = params::required_string(p, "from");
  if (!from)
    return from.error();
  c.from = std::move(*from);
  if (params::has(p, "to")) {
    auto to = params::required_string(p, "to");
    if (!to)
      return to.error();
    c.to = std::move(*to);
  }
  auto cursor = params::optional_string(p, "cursor");
  if (!cursor)
    return cursor.error();
  auto limit = params::optional_int(p, "limit", 1000);
  if (!limit)
    return limit.error();
  if (*limit < 1 || *limit > 10000)
    return invalid("limit must be 1..10000");
  c.cursor = std::move(*cursor);
  c.limit = *limit;
  return c;
}

expected<checkpoint_create> decode_checkpoint_create(const json::object& p) {
  auto req = params::decode_checkpoint_create(p);
  if (!req)
    return req.error();
  checkpoint_create c;
  c.req = std::move(*req);
  return c;
}

expected<checkpoint_delete> decode_checkpoint_delete(const json::object& p) {
  auto key = params::required_string(p, "checkpoint_id");
  if (!key)
    return key.error();
  auto force = params::optional_bool(p, "force", false);
  if (!force)
    return force.error();
  checkpoint_delete c;
  c.checkpoint_id = std::move(*key);
  c.force = *force;
  c.origin = params::origin(p);
  return c;
}

expected<session_rollback>
decode_rollback(const json::object& p, bool after_reset, bool kill_default) {
  auto req = params::decode_rollback(p, after_reset, kill_default);
  if (!req)
    return req.error();
  session_rollback c;
  c.req = std::move(*req);
  c.after_reset = after_reset;
  return c;
}

// -- runs ---------------------------------------------------------------------

/// A network mode, case- and space-insensitive as the prototype's; empty
/// when it is none of the three.
static std::string network_mode(const json::value& v) {
  std::string mode = v.is_string() ? std::string{v.get_string()} : "";
  mode.erase(std::remove_if(mode.begin(), mode.end(), ::isspace), mode.end());
  std::transform(mode.begin(), mode.end(), mode.begin(), ::tolower);
  if (mode != "inherit" && mode != "isolated" && mode != "proxy")
    return {};
  return mode;
}

/// egress {allow?: [rule], deny?: [rule]}; the rules' syntax is the
/// session's to check (guest/net/egress_rules.hpp).
static caf::error decode_egress(const json::value& v, session_configure& c) {
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

expected<session_configure> decode_network_configure(const json::object& p) {
  session_configure c;
  const auto* m = p.if_contains("mode");
  c.network = m != nullptr ? network_mode(*m) : "";
  if (c.network.empty())
    return invalid("network mode must be inherit, isolated, or proxy");
  c.status_reply = true;
  c.origin = params::origin(p);
  return c;
}

expected<network_status> decode_network_status(const json::object&) {
  return network_status{};
}

expected<session_configure> decode_configure(const json::object& p) {
  session_configure c;
  auto reset = params::optional_bool(p, "reset", false);
  if (!reset)
    return reset.error();
  c.reset = *reset;
  if (auto* n = p.if_contains("network"); n != nullptr && !n->is_null()) {
    c.network = network_mode(*n);
    if (c.network.empty())
      return invalid("network must be inherit, isolated or proxy");
  }
  if (auto* e = p.if_contains("egress"); e != nullptr)
    if (auto err = decode_egress(*e, c))
      return err;
  if (auto* l = p.if_contains("limits"); l != nullptr && !l->is_null()) {
    if (!l->is_object())
      return invalid("limits must be an object");
    c.has_limits = true;
    for (const auto& kv : l->as_object()) {
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
  if (auto* m = p.if_contains("max_runs"); m != nullptr && !m->is_null()) {
    if (!m->is_int64() || m->get_int64() < 1 || m->get_int64() > max_runs_limit)
      return invalid("max_runs must be an integer 1.." +
                     std::to_string(max_runs_limit));
    c.max_runs = m->get_int64();
  }
  c.origin = params::origin(p);
  return c;
}

expected<process_start> decode_process_start(const json::object& p) {
  process_start r;
  auto bad = [](const char* msg) {
    return invalid(msg);
  };
  auto* argv = p.if_contains("argv");
  if (argv == nullptr || !argv->is_array() || argv->as_array().empty())
    return bad("argv must be a nonempty array of nonempty strings");
  for (const auto& a : argv->as_array()) {
    if (!a.is_string())
      return bad("argv must be a nonempty array of nonempty strings");
    std::string s{a.get_string()};
    if (s.find('\0') != std::string::npos)
      return bad("argv must be a nonempty array of nonempty strings");
    r.argv.push_back(std::move(s));
  }
  if (r.argv.front().empty())
    return bad("argv must be a nonempty array of nonempty strings");
  if (auto* env = p.if_contains("env"); env != nullptr && !env->is_null()) {
    if (!env->is_object())
      return bad("env must be a string mapping with valid environment names");
    for (const auto& kv : env->as_object()) {
      std::string k{kv.key()};
      if (k.empty() || k.find('=') != std::string::npos ||
          k.find('\0') != std::string::npos || !kv.value().is_string())
        return bad("env must be a string mapping with valid environment names");
      std::string v{kv.value().get_string()};
      if (v.find('\0') != std::string::npos)
        return bad("env must be a string mapping with valid environment names");
      r.env.emplace(std::move(k), std::move(v));
    }
  }
  if (auto* t = p.if_contains("timeout"); t != nullptr && !t->is_null()) {
    if (t->is_bool() || !t->is_number())
      return bad("timeout must be in (0, 86400] seconds");
    r.timeout = t->to_number<double>();
    if (!(r.timeout > 0) || r.timeout > max_run_timeout)
      return bad("timeout must be in (0, 86400] seconds");
  }
  auto in = params::optional_bool(p, "stdin", false);
  if (!in)
    return in.error();
  r.stdin_pipe = *in;
  if (auto* t = p.if_contains("pty"); t != nullptr && !t->is_null()) {
    auto size = decode_terminal_size(*t, "pty");
    if (!size)
      return size.error();
    r.pty = *size;
    r.stdin_pipe = false;
  }
  return r;
}

namespace {

expected<std::string> run_id(const json::object& p) {
  return params::required_id(p, "run_id", "run");
}

} // namespace

expected<process_get> decode_process_get(const json::object& p) {
  auto id = run_id(p);
  if (!id)
    return id.error();
  process_get c;
  c.run_id = std::move(*id);
  return c;
}

expected<process_input> decode_process_input(const json::object& p) {
  auto id = run_id(p);
  if (!id)
    return id.error();
  auto data = params::optional_string(p, "data");
  if (!data)
    return data.error();
  if (data->size() > max_input_bytes)
    return invalid("data must be at most 65536 bytes");
  auto eof = params::optional_bool(p, "eof", false);
  if (!eof)
    return eof.error();
  process_input c;
  c.run_id = std::move(*id);
  c.data = std::move(*data);
  c.eof = *eof;
  return c;
}

expected<process_resize> decode_process_resize(const json::object& p) {
  auto id = run_id(p);
  if (!id)
    return id.error();
  auto size = decode_terminal_size(json::value(p), "the size");
  if (!size)
    return size.error();
  process_resize c;
  c.run_id = std::move(*id);
  c.size = *size;
  return c;
}

expected<process_list> decode_process_list(const json::object& p) {
  // Paging is optional, as for checkpoint.list.
  auto cursor = params::optional_string(p, "cursor");
  if (!cursor)
    return cursor.error();
  auto limit = params::optional_int(p, "limit", 0);
  if (!limit)
    return limit.error();
  if (*limit < 0 || *limit > 10000)
    return invalid("limit must be 1..10000");
  if (!cursor->empty() && *limit == 0)
    return invalid("cursor needs limit");
  process_list c;
  c.limit = *limit;
  c.cursor = std::move(*cursor);
  return c;
}

expected<process_stop> decode_process_stop(const json::object& p) {
  auto id = run_id(p);
  if (!id)
    return id.error();
  process_stop c;
  c.run_id = std::move(*id);
  return c;
}

expected<process_wait> decode_process_wait(const json::object& p) {
  auto id = run_id(p);
  if (!id)
    return id.error();
  auto timeout = params::optional_int(p, "timeout_ms", 30000);
  if (!timeout)
    return timeout.error();
  // Bounded by the daemon's request deadline (300 s by default).
  if (*timeout < 0 || *timeout > 300000)
    return invalid("timeout_ms must be 0..300000");
  process_wait c;
  c.run_id = std::move(*id);
  c.timeout_ms = *timeout;
  return c;
}

expected<process_output> decode_process_output(const json::object& p) {
  auto id = run_id(p);
  if (!id)
    return id.error();
  auto stream = params::optional_string(p, "stream", "stdout");
  if (!stream)
    return stream.error();
  if (*stream != "stdout" && *stream != "stderr")
    return invalid("stream must be stdout or stderr");
  auto offset = params::optional_int(p, "offset", 0);
  if (!offset)
    return offset.error();
  auto limit = params::optional_int(p, "limit", 65536);
  if (!limit)
    return limit.error();
  if (*offset < 0 || *limit < 1 || *limit > (1 << 20))
    return invalid("offset must be nonnegative; limit must be 1..1048576");
  process_output c;
  c.run_id = std::move(*id);
  c.stream = std::move(*stream);
  c.offset = *offset;
  c.limit = *limit;
  return c;
}

expected<process_events> decode_process_events(const json::object& p) {
  auto id = run_id(p);
  if (!id)
    return id.error();
  auto after = params::optional_int(p, "after", 0);
  auto limit = params::optional_int(p, "limit", 100);
  if (!after || !limit || *after < 0 || *limit < 1 || *limit > 1000)
    return invalid("after must be nonnegative; limit must be 1..1000");
  process_events c;
  c.run_id = std::move(*id);
  c.after = *after;
  c.limit = *limit;
  return c;
}

expected<process_tree> decode_process_tree(const json::object& p) {
  auto id = run_id(p);
  if (!id)
    return id.error();
  process_tree c;
  c.run_id = std::move(*id);
  return c;
}

// -- runtime and lifecycle ----------------------------------------------------

expected<execution_acquire> decode_execution_acquire(const json::object&) {
  return execution_acquire{};
}

expected<execution_release> decode_execution_release(const json::object& p) {
  auto token = params::required_string(p, "lease_token");
  if (!token)
    return token.error();
  execution_release c;
  c.lease_token = std::move(*token);
  return c;
}

expected<runtime_register_background>
decode_register_background(const json::object& p) {
  auto sandbox = params::required_string(p, "sandbox_id");
  if (!sandbox)
    return sandbox.error();
  auto execution = params::required_string(p, "execution_id");
  if (!execution)
    return execution.error();
  runtime_register_background c;
  c.sandbox_id = std::move(*sandbox);
  c.execution_id = std::move(*execution);
  return c;
}

expected<runtime_begin_reset> decode_begin_reset(const json::object& p) {
  runtime_begin_reset c;
  if (params::has(p, "kill_processes")) {
    auto kill = params::optional_bool(p, "kill_processes", false);
    if (!kill)
      return kill.error();
    c.kill_processes = *kill;
  }
  return c;
}

expected<runtime_complete_reset> decode_complete_reset(const json::object& p) {
  auto token = params::required_string(p, "reset_token");
  if (!token)
    return token.error();
  auto success = params::optional_bool(p, "success", false);
  if (!success)
    return success.error();
  runtime_complete_reset c;
  c.reset_token = std::move(*token);
  c.success = *success;
  return c;
}

expected<session_unfence> decode_unfence(const json::object& p) {
  session_unfence c;
  c.origin = params::origin(p);
  return c;
}

expected<session_describe> decode_session_describe(const json::object&) {
  return session_describe{};
}

expected<session_delete> decode_session_delete(const json::object& p) {
  session_delete c;
  c.origin = params::origin(p);
  return c;
}

// -- store and agents ---------------------------------------------------------

namespace {

/// True for commands that carry the `origin` their handler audits.
template <class Command, class = void>
struct audited : std::false_type {};

template <class Command>
struct audited<Command, std::void_t<decltype(Command::origin)>>
    : std::true_type {};

/// A command naming an agent: "missing string parameter: agent_id", or
/// "invalid agent id: ..." (messages/ids.hpp).
template <class Command>
expected<Command> for_agent(const json::object& p) {
  auto aid = params::required_id(p, "agent_id", "agent");
  if (!aid)
    return aid.error();
  Command c;
  c.agent_id = std::move(*aid);
  if constexpr (audited<Command>::value)
    c.origin = params::origin(p);
  return c;
}

/// A command naming a session of an agent; the agent id is checked first.
template <class Command>
expected<Command> for_session(const json::object& p) {
  auto agent = for_agent<agent_describe>(p);
  if (!agent)
    return agent.error();
  auto sid = params::required_id(p, "session_id", "session");
  if (!sid)
    return sid.error();
  Command c;
  c.session = {std::move(agent->agent_id), std::move(*sid)};
  c.origin = params::origin(p);
  return c;
}

} // namespace

expected<store_initialize> decode_store_initialize(const json::object&) {
  return store_initialize{};
}

expected<agent_list> decode_agent_list(const json::object&) {
  return agent_list{};
}

expected<agent_create> decode_agent_create(const json::object& p) {
  return for_agent<agent_create>(p);
}

expected<agent_describe> decode_agent_describe(const json::object& p) {
  return for_agent<agent_describe>(p);
}

expected<agent_delete> decode_agent_delete(const json::object& p) {
  return for_agent<agent_delete>(p);
}

expected<session_fork> decode_session_fork(const json::object& p) {
  auto source = for_session<session_create>(p);
  if (!source)
    return source.error();
  auto target = params::required_id(p, "new_session_id", "session");
  if (!target)
    return target.error();
  if (*target == source->session.session_id)
    return invalid("new_session_id must differ from session_id");
  // Workspaces of agents share data only through share.*.
  if (auto* other = p.if_contains("new_agent_id");
      other &&
      !(other->is_string() && other->get_string() == source->session.agent_id))
    return invalid("fork into another agent is refused");
  auto checkpoint = params::optional_string(p, "checkpoint_id");
  if (!checkpoint)
    return checkpoint.error();
  session_fork c;
  c.session = std::move(source->session);
  c.new_session_id = std::move(*target);
  c.checkpoint_id = std::move(*checkpoint);
  c.origin = params::origin(p);
  return c;
}

expected<session_create> decode_session_create(const json::object& p) {
  return for_session<session_create>(p);
}

expected<session_list> decode_session_list(const json::object& p) {
  return for_agent<session_list>(p);
}

expected<session_delete_request>
decode_session_delete_request(const json::object& p) {
  return for_session<session_delete_request>(p);
}

} // namespace allox::cmd
