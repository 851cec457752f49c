// SPDX-License-Identifier: Apache-2.0
// E2B's network settings as the session's (network.hpp), and
// PUT /sandboxes/{id}/network over session.configure.
#include "fronts/e2b/network.hpp"

#include "fronts/e2b/handlers.hpp"
#include "messages/commands/runs.hpp"

#include <algorithm>

namespace allox::e2b {

namespace {

constexpr std::string_view all_traffic = "0.0.0.0/0";

caf::error bad_network(std::string msg) {
  return make_error(errc::invalid_argument, std::move(msg));
}

/// An E2B entry as our rule HOST:PORTS (every port: E2B's entries name no
/// port). IPv6 addresses and ranges are bracketed.
expected<std::string> to_rule(const std::string& entry) {
  if (entry.empty() || entry.size() > 253)
    return bad_network("a network entry must be 1..253 characters");
  auto ok = std::all_of(entry.begin(), entry.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
           c == '-' || c == '*' || c == '/' || c == ':' || c == '_';
  });
  if (!ok)
    return bad_network("network entry '" + entry +
                       "' is not an address, a CIDR or a domain name");
  if (entry.find(':') != std::string::npos)
    return "[" + entry + "]:*";
  return entry + ":*";
}

caf::error entries(const json::object* network, const char* key,
                   std::vector<std::string>& out) {
  if (network == nullptr)
    return caf::none;
  auto* v = network->if_contains(key);
  if (v == nullptr || v->is_null())
    return caf::none;
  if (!v->is_array())
    return bad_network(std::string{"network."} + key + " must be an array");
  if (v->as_array().size() > 256)
    return bad_network(std::string{"network."} + key +
                       " holds at most 256 entries");
  for (const auto& e : v->as_array()) {
    if (!e.is_string())
      return bad_network(std::string{"network."} + key + " holds strings only");
    out.emplace_back(e.as_string());
  }
  return caf::none;
}

} // namespace

expected<network_request> decode_network(const json::object& body,
                                         const json::object* network) {
  network_request r;
  if (auto* a = body.if_contains("allow_internet_access");
      a != nullptr && !a->is_null()) {
    if (!a->is_bool())
      return bad_network("allow_internet_access must be a boolean");
    r.allow_internet = a->as_bool();
  }
  if (auto err = entries(network, "allowOut", r.allow_out))
    return err;
  if (auto err = entries(network, "denyOut", r.deny_out))
    return err;
  for (const auto* list : {&r.allow_out, &r.deny_out})
    for (const auto& e : *list)
      if (auto rule = to_rule(e); !rule)
        return rule.error();
  return r;
}

session_network to_session_network(const network_request& r) {
  if (!r.allow_internet)
    return {"isolated", {}, {}};
  if (r.allow_out.empty() && r.deny_out.empty())
    return {"inherit", {}, {}};
  session_network n{"proxy", {}, {}};
  auto denies_all = std::find(r.deny_out.begin(), r.deny_out.end(),
                              all_traffic) != r.deny_out.end();
  if (!denies_all)
    n.allow.emplace_back("*:*");
  for (const auto& e : r.allow_out)
    n.allow.push_back(*to_rule(e));
  for (const auto& e : r.deny_out)
    if (e != all_traffic)
      n.deny.push_back(*to_rule(e));
  return n;
}

json::object network_record(const network_request& r) {
  json::array allow(r.allow_out.begin(), r.allow_out.end());
  json::array deny(r.deny_out.begin(), r.deny_out.end());
  return {{"allow_internet", r.allow_internet},
          {"allow_out", std::move(allow)},
          {"deny_out", std::move(deny)}};
}

network_request network_from_record(const json::object& record) {
  network_request r;
  if (auto* a = record.if_contains("allow_internet"); a && a->is_bool())
    r.allow_internet = a->as_bool();
  for (auto [key, out] : {std::pair{"allow_out", &r.allow_out},
                          std::pair{"deny_out", &r.deny_out}})
    if (auto* v = record.if_contains(key); v && v->is_array())
      for (const auto& e : v->as_array())
        if (e.is_string())
          out->emplace_back(e.as_string());
  return r;
}

cmd::session_configure network_settings(const network_request& r) {
  auto n = to_session_network(r);
  cmd::session_configure c;
  c.network = n.mode;
  c.has_egress = true;
  c.egress_allow = n.allow;
  c.egress_deny = n.deny;
  c.origin = "e2b";
  return c;
}

void network_route(front_self self, request& req, sandbox& sb,
                   const json::object& body) {
  auto asked = decode_network(body, &body);
  if (!asked)
    return answer_error(req.answer(), asked.error());
  auto id = sb.id;
  call_session(
      self, sb.agent, id, network_settings(*asked),
      [self, id, asked = *asked, answer = req.answer()](settings_view&) {
        auto it = self->state.sandboxes.find(id);
        if (it == self->state.sandboxes.end())
          return answer_error(answer, 404, "sandbox " + id + " not found");
        it->second.network = asked;
        save(self, it->second, [answer](caf::error err) {
          if (err)
            return answer_error(answer, err);
          answer_json(answer, 204, nullptr);
        });
      },
      [answer = req.answer()](caf::error& err) { answer_error(answer, err); });
}

} // namespace allox::e2b
