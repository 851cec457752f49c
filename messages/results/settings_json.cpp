// SPDX-License-Identifier: Apache-2.0
#include "messages/results/settings_json.hpp"

#include "messages/results/json_detail.hpp"
#include "messages/results/network_json.hpp"

#include <algorithm>

namespace allox {

namespace {

auto find_limit(limit_list& limits, const std::string& name) {
  return std::find_if(limits.begin(), limits.end(),
                      [&](const auto& kv) { return kv.first == name; });
}

std::vector<std::string> strings_of(const json::object& o, const char* key) {
  std::vector<std::string> out;
  if (auto* a = o.if_contains(key); a && a->is_array())
    for (const auto& x : a->as_array())
      if (x.is_string())
        out.emplace_back(x.get_string());
  return out;
}

} // namespace

void set_limit(limit_list& limits, const std::string& name,
               std::string value) {
  if (auto it = find_limit(limits, name); it != limits.end())
    it->second = std::move(value);
  else
    limits.emplace_back(name, std::move(value));
}

void clear_limit(limit_list& limits, const std::string& name) {
  if (auto it = find_limit(limits, name); it != limits.end())
    limits.erase(it);
}

run_settings effective_settings(const own_settings& own,
                                const std::string& default_network,
                                const limit_list& default_limits) {
  run_settings r;
  r.network = own.network ? *own.network : default_network;
  if (own.egress)
    r.egress = *own.egress;
  r.limits = default_limits;
  for (const auto& [name, value] : own.limits)
    set_limit(r.limits, name, value);
  if (own.max_runs)
    r.max_runs = *own.max_runs;
  return r;
}

own_settings parse_own_settings(const caf::optional<std::string>& text) {
  own_settings own;
  if (!text)
    return own;
  boost::system::error_code ec;
  auto doc = json::parse(*text, ec);
  if (ec || !doc.is_object())
    return own;
  const auto& o = doc.get_object();
  if (auto* n = o.if_contains("network"); n && n->is_string())
    own.network = std::string{n->get_string()};
  if (auto* e = o.if_contains("egress"); e && e->is_object())
    own.egress = egress_lists{strings_of(e->get_object(), "allow"),
                              strings_of(e->get_object(), "deny")};
  if (auto* l = o.if_contains("limits"); l && l->is_object())
    for (const auto& kv : l->get_object())
      if (kv.value().is_string())
        own.limits.emplace_back(std::string{kv.key()},
                                std::string{kv.value().get_string()});
  if (auto* m = o.if_contains("max_runs"); m && m->is_int64())
    own.max_runs = m->get_int64();
  return own;
}

json::object to_json(const limit_list& limits) {
  json::object o;
  for (const auto& [name, value] : limits)
    o[name] = value;
  return o;
}

json::object to_json(const own_settings& own) {
  json::object o;
  if (own.network)
    o["network"] = *own.network;
  if (own.egress)
    o["egress"] = to_json(*own.egress);
  if (!own.limits.empty())
    o["limits"] = to_json(own.limits);
  if (own.max_runs)
    o["max_runs"] = *own.max_runs;
  return o;
}

caf::optional<std::string> serialize_own_settings(const own_settings& own) {
  if (own.empty())
    return caf::none;
  return json::serialize(to_json(own));
}

json::object to_json(const settings_view& v) {
  const auto& s = v.settings;
  return {{"network", s.network},
          {"egress", to_json(s.egress)},
          {"limits", to_json(s.limits)},
          {"max_runs", s.max_runs},
          {"agent_id", v.agent_id},
          {"session_id", v.session_id}};
}

} // namespace allox
