// SPDX-License-Identifier: Apache-2.0
#include "messages/policy.hpp"

#include <algorithm>

namespace allox {

namespace {

constexpr int64_t max_interval_seconds = 86400;
constexpr int64_t max_keep_auto = 100000;

/// Calls `fn(name, field)` for each boolean and each integer field.
template <class Policy, class Bool, class Int>
void each_field(Policy& p, Bool on_bool, Int on_int) {
  on_bool("auto_checkpoint_turns", p.auto_checkpoint_turns);
  on_bool("auto_checkpoint_runs", p.auto_checkpoint_runs);
  on_int("interval_seconds", p.interval_seconds, max_interval_seconds);
  on_int("keep_auto", p.keep_auto, max_keep_auto);
  on_bool("strict", p.strict);
  on_bool("keep_pre_rollback", p.keep_pre_rollback);
}

/// An integer of a JSON value, if it is one (booleans are not).
caf::optional<int64_t> integer_of(const json::value& v) {
  if (v.is_int64())
    return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= INT64_MAX)
    return static_cast<int64_t>(v.get_uint64());
  return caf::none;
}

} // namespace

const std::vector<std::string>& policy_fields() {
  static const std::vector<std::string> names{"auto_checkpoint_turns",
                                              "auto_checkpoint_runs",
                                              "interval_seconds",
                                              "keep_auto",
                                              "strict",
                                              "keep_pre_rollback"};
  return names;
}

checkpoint_policy parse_policy(const caf::optional<std::string>& text) {
  checkpoint_policy p;
  if (!text)
    return p;
  boost::system::error_code ec;
  auto v = json::parse(*text, ec);
  if (ec || !v.is_object())
    return p;
  const auto& o = v.as_object();
  each_field(
      p,
      [&o](const char* name, caf::optional<bool>& field) {
        if (auto* x = o.if_contains(name); x && x->is_bool())
          field = x->get_bool();
      },
      [&o](const char* name, caf::optional<int64_t>& field, int64_t) {
        if (auto* x = o.if_contains(name); x)
          if (auto n = integer_of(*x))
            field = *n;
      });
  return p;
}

json::object to_json(const checkpoint_policy& p) {
  json::object o;
  each_field(
      p,
      [&o](const char* name, const caf::optional<bool>& field) {
        if (field)
          o[name] = *field;
      },
      [&o](const char* name, const caf::optional<int64_t>& field, int64_t) {
        if (field)
          o[name] = *field;
      });
  return o;
}

caf::optional<std::string> serialize_policy(const checkpoint_policy& p) {
  auto o = to_json(p);
  if (o.empty())
    return caf::none;
  return json::serialize(o);
}

expected<policy_change> decode_policy_change(const json::object& params) {
  policy_change c;
  caf::error err;
  each_field(
      c.set,
      [&](const char* name, caf::optional<bool>& field) {
        auto* x = params.if_contains(name);
        if (x == nullptr || err)
          return;
        if (x->is_null())
          c.cleared.emplace_back(name);
        else if (x->is_bool())
          field = x->get_bool();
        else
          err = make_error(errc::invalid_argument,
                           std::string{name} + " must be a boolean or null");
      },
      [&](const char* name, caf::optional<int64_t>& field, int64_t max) {
        auto* x = params.if_contains(name);
        if (x == nullptr || err)
          return;
        auto n = integer_of(*x);
        if (x->is_null())
          c.cleared.emplace_back(name);
        else if (n && *n >= 0 && *n <= max)
          field = *n;
        else
          err = make_error(errc::invalid_argument,
                           std::string{name} + " must be an integer 0.." +
                               std::to_string(max) + " or null");
      });
  if (err)
    return err;
  return c;
}

checkpoint_policy apply(checkpoint_policy p, const policy_change& c) {
  auto cleared = [&c](const char* name) {
    return std::find(c.cleared.begin(), c.cleared.end(), name) !=
           c.cleared.end();
  };
  auto merge = [&cleared](const char* name, auto& field, const auto& value) {
    if (cleared(name))
      field = caf::none;
    else if (value)
      field = value;
  };
  merge("auto_checkpoint_turns", p.auto_checkpoint_turns,
        c.set.auto_checkpoint_turns);
  merge("auto_checkpoint_runs", p.auto_checkpoint_runs,
        c.set.auto_checkpoint_runs);
  merge("interval_seconds", p.interval_seconds, c.set.interval_seconds);
  merge("keep_auto", p.keep_auto, c.set.keep_auto);
  merge("strict", p.strict, c.set.strict);
  merge("keep_pre_rollback", p.keep_pre_rollback, c.set.keep_pre_rollback);
  return p;
}

effective_policy resolve(const checkpoint_policy& agent,
                         const checkpoint_policy& session) {
  effective_policy e;
  auto pick = [](auto& out, const auto& s, const auto& a) {
    if (s)
      out = *s;
    else if (a)
      out = *a;
  };
  pick(e.auto_checkpoint_turns, session.auto_checkpoint_turns,
       agent.auto_checkpoint_turns);
  pick(e.auto_checkpoint_runs, session.auto_checkpoint_runs,
       agent.auto_checkpoint_runs);
  pick(e.interval_seconds, session.interval_seconds, agent.interval_seconds);
  pick(e.keep_auto, session.keep_auto, agent.keep_auto);
  pick(e.strict, session.strict, agent.strict);
  // Undoable rollbacks come with the turn policy unless set either way.
  e.keep_pre_rollback = e.auto_checkpoint_turns;
  pick(e.keep_pre_rollback, session.keep_pre_rollback, agent.keep_pre_rollback);
  return e;
}

json::object describe_policy(const checkpoint_policy& agent,
                             const checkpoint_policy& session,
                             bool with_session) {
  auto e = resolve(agent, with_session ? session : checkpoint_policy{});
  json::object policy{{"auto_checkpoint_turns", e.auto_checkpoint_turns},
                      {"auto_checkpoint_runs", e.auto_checkpoint_runs},
                      {"interval_seconds", e.interval_seconds},
                      {"keep_auto", e.keep_auto},
                      {"strict", e.strict},
                      {"keep_pre_rollback", e.keep_pre_rollback}};
  auto agent_set = to_json(agent);
  auto session_set = with_session ? to_json(session) : json::object{};
  json::object sources;
  for (const auto& name : policy_fields())
    sources[name] = session_set.contains(name) ? "session"
                    : agent_set.contains(name) ? "agent"
                                               : "default";
  json::object o{{"policy", std::move(policy)},
                 {"sources", std::move(sources)},
                 {"agent", std::move(agent_set)}};
  if (with_session)
    o["session"] = std::move(session_set);
  return o;
}

json::object to_json(const policy_view& v) {
  auto o =
      describe_policy(v.agent, v.session ? *v.session : checkpoint_policy{},
                      static_cast<bool>(v.session));
  o["agent_id"] = v.agent_id;
  if (v.session)
    o["session_id"] = v.session_id;
  return o;
}

} // namespace allox
