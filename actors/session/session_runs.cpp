#include "actors/session/session_runs.hpp"

#include "messages/params.hpp"

#include <algorithm>

namespace allox {

expected<start_request> decode_start(const json::object& p) {
  start_request r;
  auto bad = [](const char* msg) {
    return make_error(errc::invalid_argument, msg);
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
  return r;
}

caf::error check_limit(const exec_config& cfg, const std::string& name,
                       const std::string& value) {
  bool known = false;
  for (const auto* f : limit_files)
    known |= name == f;
  if (!known)
    return make_error(errc::invalid_argument,
                      "unknown limit: " + name +
                          " (memory.max, pids.max, cpu.max)");
  if (value.empty() || value.find_first_of("\n\0") != std::string::npos)
    return make_error(errc::invalid_argument, "invalid value for " + name);
  auto controller = name.substr(0, name.find('.'));
  auto available = cfg.cgroups.controllers();
  if (std::find(available.begin(), available.end(), controller) ==
      available.end()) {
    std::string list;
    for (const auto& c : available)
      list += (list.empty() ? "" : ", ") + c;
    return make_error(errc::unsupported,
                      name + " needs the " + controller +
                          " cgroup controller, which is not available here "
                          "(available: " +
                          (list.empty() ? std::string{"none"} : list) + ")");
  }
  return caf::none;
}

} // namespace allox
