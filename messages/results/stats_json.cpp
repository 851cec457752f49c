// SPDX-License-Identifier: Apache-2.0
#include "messages/results/stats_json.hpp"

#include <string_view>

namespace allox {

namespace {

/// The object of `group` inside `root`, created (at the end, so keys keep
/// the order of first use) along the '/'-separated path.
json::object& group_object(json::object& root, std::string_view group) {
  json::object* at = &root;
  while (!group.empty()) {
    auto slash = group.find('/');
    auto segment = group.substr(0, slash);
    group = slash == std::string_view::npos ? std::string_view{}
                                            : group.substr(slash + 1);
    auto* v = at->if_contains(segment);
    if (!v || !v->is_object()) {
      auto& slot = (*at)[segment];
      slot.emplace_object();
      v = &slot;
    }
    at = &v->as_object();
  }
  return *at;
}

struct value_to_json {
  json::value operator()(const stats_null&) const { return nullptr; }
  json::value operator()(bool b) const { return b; }
  json::value operator()(int64_t i) const { return i; }
  json::value operator()(uint64_t u) const { return u; }
  json::value operator()(double d) const { return d; }
  json::value operator()(const std::string& s) const { return json::string{s}; }
  json::value operator()(const stats_histogram& h) const {
    json::array counts;
    for (auto c : h.counts)
      counts.emplace_back(c);
    return json::object{
        {"counts", std::move(counts)}, {"sum", h.sum}, {"count", h.count}};
  }
  json::value operator()(const stats_json& j) const {
    boost::system::error_code ec;
    auto v = json::parse(j.text, ec);
    return ec ? json::value(nullptr) : v;
  }
};

} // namespace

json::value to_json(const stats_value& v) {
  return caf::visit(value_to_json{}, v);
}

json::object to_json(const actor_stats& s) {
  json::object o;
  if (!s.kind.empty())
    o["kind"] = s.kind;
  if (!s.agent_id.empty())
    o["agent_id"] = s.agent_id;
  if (!s.session_id.empty())
    o["session_id"] = s.session_id;
  for (const auto& e : s.entries)
    group_object(o, e.group)[e.name] = to_json(e.value);
  if (s.supervises) {
    json::array children;
    children.reserve(s.children.size());
    for (const auto& c : s.children)
      children.emplace_back(to_json(c));
    o["children"] = std::move(children);
  }
  return o;
}

void add_json_entries(stats_group group, const json::object& o) {
  for (const auto& kv : o) {
    std::string name{kv.key()};
    const auto& v = kv.value();
    switch (v.kind()) {
    case json::kind::null:
      group.fact(std::move(name), nullptr);
      break;
    case json::kind::bool_:
      group.fact(std::move(name), v.get_bool());
      break;
    case json::kind::int64:
      group.gauge(std::move(name), v.get_int64());
      break;
    case json::kind::uint64:
      group.gauge(std::move(name), v.get_uint64());
      break;
    case json::kind::double_:
      group.gauge(std::move(name), v.get_double());
      break;
    case json::kind::string:
      group.fact(std::move(name), std::string{v.get_string()});
      break;
    case json::kind::object:
      // An empty object has no entries to create its group: kept whole.
      if (v.get_object().empty())
        group.fact(std::move(name), stats_json{"{}"});
      else
        add_json_entries(group.group(name), v.get_object());
      break;
    case json::kind::array:
      group.fact(std::move(name), stats_json{json::serialize(v)});
      break;
    }
  }
}

} // namespace allox
