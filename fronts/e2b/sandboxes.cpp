// SPDX-License-Identifier: Apache-2.0
#include "fronts/e2b/sandboxes.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace allox::e2b {

namespace {

caf::error invalid(std::string msg) {
  return make_error(errc::invalid_argument, std::move(msg));
}

/// {string: string}, absent or null: empty.
caf::error string_map(const json::object& o, std::string_view key,
                      std::map<std::string, std::string>& out) {
  auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null())
    return caf::none;
  if (!v->is_object())
    return invalid(std::string{key} + " must be an object of strings");
  for (const auto& kv : v->as_object()) {
    if (!kv.value().is_string())
      return invalid(std::string{key} + "." + std::string{kv.key()} +
                     " must be a string");
    out[std::string{kv.key()}] = std::string{kv.value().as_string()};
  }
  return caf::none;
}

json::object string_object(const std::map<std::string, std::string>& m) {
  json::object o;
  for (const auto& [k, v] : m)
    o[k] = v;
  return o;
}

std::string_view state_of(const sandbox& s) {
  return s.paused ? "paused" : "running";
}

} // namespace

expected<int64_t> decode_timeout(const json::value& v) {
  if (!v.is_int64() && !v.is_uint64())
    return invalid("timeout must be an integer number of seconds");
  auto t = v.to_number<int64_t>();
  if (t < 1 || t > max_timeout_s)
    return invalid("timeout must be 1.." + std::to_string(max_timeout_s) +
                   " seconds");
  return t;
}

expected<create_request> decode_create(const json::value& body) {
  if (!body.is_object())
    return invalid("the body must be a JSON object");
  const auto& o = body.as_object();
  create_request r;
  if (auto* t = o.if_contains("templateID"); t != nullptr && !t->is_null()) {
    if (!t->is_string())
      return invalid("templateID must be a string");
    r.template_id = std::string{t->as_string()};
    if (r.template_id.empty())
      r.template_id = "base";
  }
  if (auto* t = o.if_contains("timeout"); t != nullptr && !t->is_null()) {
    auto s = decode_timeout(*t);
    if (!s)
      return s.error();
    r.timeout_s = *s;
  }
  if (auto err = string_map(o, "metadata", r.metadata))
    return err;
  if (auto err = string_map(o, "envVars", r.envs))
    return err;
  const json::object* network = nullptr;
  if (auto* n = o.if_contains("network"); n != nullptr && !n->is_null()) {
    if (!n->is_object())
      return invalid("network must be an object");
    network = &n->as_object();
  }
  auto net = decode_network(o, network);
  if (!net)
    return net.error();
  r.network = std::move(*net);
  if (auto* a = o.if_contains("autoPause"); a != nullptr && !a->is_null()) {
    if (!a->is_bool())
      return invalid("autoPause must be a boolean");
    r.at_timeout = a->as_bool() ? on_timeout::pause : on_timeout::kill;
  }
  if (auto* m = o.if_contains("autoPauseMemory");
      m != nullptr && !m->is_null()) {
    if (!m->is_bool())
      return invalid("autoPauseMemory must be a boolean");
    r.pause_memory = m->as_bool();
  }
  return r;
}

std::string to_record(const sandbox& s) {
  return json::serialize(json::object{
      {"front", "e2b"},
      {"template", s.template_id},
      {"metadata", string_object(s.metadata)},
      {"envs", string_object(s.envs)},
      {"access_token", s.access_token},
      {"started_ms", s.started_ms},
      {"end_ms", s.end_ms},
      {"on_timeout", s.at_timeout == on_timeout::pause ? "pause" : "kill"},
      {"pause_memory", s.pause_memory},
      {"paused", s.paused},
      {"network", network_record(s.network)}});
}

caf::optional<sandbox> from_record(const std::string& agent,
                                   const std::string& id,
                                   const std::string& record) {
  boost::system::error_code ec;
  auto doc = json::parse(record, ec);
  if (ec || !doc.is_object())
    return caf::none;
  const auto& o = doc.as_object();
  auto* front = o.if_contains("front");
  if (front == nullptr || *front != "e2b")
    return caf::none;
  sandbox s;
  s.id = id;
  s.agent = agent;
  auto text = [&o](const char* key) {
    auto* v = o.if_contains(key);
    return v != nullptr && v->is_string() ? std::string{v->as_string()}
                                          : std::string{};
  };
  auto number = [&o](const char* key) {
    auto* v = o.if_contains(key);
    return v != nullptr && v->is_int64() ? v->as_int64() : int64_t{0};
  };
  s.template_id = text("template");
  s.access_token = text("access_token");
  s.started_ms = number("started_ms");
  s.end_ms = number("end_ms");
  s.at_timeout =
      text("on_timeout") == "pause" ? on_timeout::pause : on_timeout::kill;
  auto flag = [&o](const char* key, bool fallback) {
    auto* v = o.if_contains(key);
    return v != nullptr && v->is_bool() ? v->as_bool() : fallback;
  };
  if (auto* n = o.if_contains("network"); n != nullptr && n->is_object())
    s.network = network_from_record(n->as_object());
  s.pause_memory = flag("pause_memory", true);
  s.paused = flag("paused", false);
  if (string_map(o, "metadata", s.metadata) || string_map(o, "envs", s.envs) ||
      s.access_token.empty())
    return caf::none;
  return s;
}

json::object created_json(const sandbox& s) {
  return {{"sandboxID", s.id},
          {"templateID", s.template_id},
          {"clientID", "allox"},
          {"alias", s.template_id},
          {"envdVersion", envd_version},
          {"envdAccessToken", s.access_token},
          {"domain", nullptr}};
}

json::object listed_json(const sandbox& s) {
  return {{"sandboxID", s.id},
          {"templateID", s.template_id},
          {"alias", s.template_id},
          {"clientID", "allox"},
          {"startedAt", rfc3339(s.started_ms)},
          {"endAt", rfc3339(s.end_ms)},
          {"cpuCount", 0},
          {"memoryMB", 0},
          {"diskSizeMB", 0},
          {"envdVersion", envd_version},
          {"state", state_of(s)},
          {"metadata", string_object(s.metadata)}};
}

json::object detail_json(const sandbox& s) {
  auto o = listed_json(s);
  o["allowInternetAccess"] = s.network.allow_internet;
  o["lifecycle"] = json::object{
      {"onTimeout", s.at_timeout == on_timeout::pause ? "pause" : "kill"},
      {"autoResume", false}};
  o["domain"] = nullptr;
  return o;
}

namespace {

/// Splits a form-encoded string into decoded pairs.
bool form_pairs(std::string_view text,
                std::vector<std::pair<std::string, std::string>>& out) {
  while (!text.empty()) {
    auto amp = text.find('&');
    auto part = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view{}
                                         : text.substr(amp + 1);
    if (part.empty())
      continue;
    auto eq = part.find('=');
    std::string k, v;
    if (!percent_decode(part.substr(0, eq), k, true) ||
        !percent_decode(eq == std::string_view::npos ? std::string_view{}
                                                     : part.substr(eq + 1),
                        v, true))
      return false;
    out.emplace_back(std::move(k), std::move(v));
  }
  return true;
}

} // namespace

expected<list_query> decode_list_query(std::string_view query) {
  list_query q;
  std::vector<std::pair<std::string, std::string>> pairs;
  if (!form_pairs(query, pairs))
    return invalid("malformed query string");
  for (const auto& [key, value] : pairs) {
    if (key == "metadata") {
      std::vector<std::pair<std::string, std::string>> meta;
      if (!form_pairs(value, meta))
        return invalid("malformed metadata filter");
      for (auto& [k, v] : meta) {
        // The SDK percent-encodes each key and value before the pairs.
        std::string dk, dv;
        if (!percent_decode(k, dk) || !percent_decode(v, dv))
          return invalid("malformed metadata filter");
        q.metadata[dk] = dv;
      }
    } else if (key == "state") {
      std::string_view rest = value;
      while (!rest.empty()) {
        auto comma = rest.find(',');
        auto s = std::string{rest.substr(0, comma)};
        rest = comma == std::string_view::npos ? std::string_view{}
                                               : rest.substr(comma + 1);
        if (s != "running" && s != "paused")
          return invalid("state must be running and/or paused, not '" + s +
                         "'");
        q.states.push_back(s);
      }
    } else if (key == "limit") {
      char* end = nullptr;
      auto n = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || n < 1 || n > 1000)
        return invalid("limit must be 1..1000");
      q.limit = static_cast<size_t>(n);
    } else if (key == "nextToken") {
      q.after = value;
    }
    // Other keys (order, template, startedAfter) narrow nothing here yet.
  }
  return q;
}

std::vector<const sandbox*> list_page(const std::map<std::string, sandbox>& all,
                                      const list_query& q, std::string& next) {
  std::vector<const sandbox*> page;
  next.clear();
  auto it = q.after.empty() ? all.begin() : all.upper_bound(q.after);
  for (; it != all.end(); ++it) {
    const auto& s = it->second;
    if (!q.states.empty() && std::find(q.states.begin(), q.states.end(),
                                       state_of(s)) == q.states.end())
      continue;
    bool match =
        std::all_of(q.metadata.begin(), q.metadata.end(), [&s](const auto& kv) {
          auto m = s.metadata.find(kv.first);
          return m != s.metadata.end() && m->second == kv.second;
        });
    if (!match)
      continue;
    if (page.size() == q.limit) {
      next = page.back()->id;
      break;
    }
    page.push_back(&s);
  }
  return page;
}

std::string rfc3339(int64_t unix_ms) {
  return rfc3339_ns(unix_ms * 1000000, 3);
}

std::string rfc3339_ns(int64_t unix_ns, int digits) {
  std::time_t secs = static_cast<std::time_t>(unix_ns / 1000000000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  auto fraction = unix_ns % 1000000000;
  for (int i = digits; i < 9; ++i)
    fraction /= 10;
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%0*lldZ",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec, digits, static_cast<long long>(fraction));
  return buf;
}

std::string error_body(int status, std::string_view message) {
  return json::serialize(json::object{{"code", status}, {"message", message}});
}

} // namespace allox::e2b
