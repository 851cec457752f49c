// SPDX-License-Identifier: Apache-2.0
#include "cli/config.hpp"

#include <cpptoml.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace allox::ctl {

const std::vector<std::string>& profile_keys() {
  static const std::vector<std::string> keys{"url", "token", "output", "agent",
                                             "session"};
  return keys;
}

std::string config_path(const std::function<const char*(const char*)>& env) {
  if (const char* p = env("ALLOX_CONFIG"); p && *p)
    return p;
  if (const char* x = env("XDG_CONFIG_HOME"); x && *x)
    return std::string{x} + "/allox/config.toml";
  const char* home = env("HOME");
  return std::string{home && *home ? home : "."} + "/.config/allox/config.toml";
}

namespace {

bool is_profile_key(const std::string& k) {
  const auto& keys = profile_keys();
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

result<config_file> check(const std::string& path,
                          const std::shared_ptr<cpptoml::table>& root) {
  config_file cfg;
  cfg.path = path;
  cfg.exists = true;
  auto bad = [&](const std::string& why) {
    return config_error(path + ": " + why);
  };
  for (const auto& [key, node] : *root) {
    if (key == "current_profile") {
      auto v = root->get_as<std::string>(key);
      if (!v)
        return bad("current_profile must be a string");
      cfg.current_profile = *v;
    } else if (key == "profile") {
      auto profiles = node->as_table();
      if (!profiles)
        return bad("profile must be a table of [profile.NAME] tables");
      for (const auto& [name, pnode] : *profiles) {
        auto p = pnode->as_table();
        if (!p)
          return bad("profile." + name + " must be a table");
        auto& out = cfg.profiles[name];
        for (const auto& [k, v] : *p) {
          if (!is_profile_key(k))
            return bad("unknown key profile." + name + "." + k);
          auto s = p->get_as<std::string>(k);
          if (!s)
            return bad("profile." + name + "." + k + " must be a string");
          out[k] = *s;
        }
      }
    } else {
      return bad("unknown key " + key);
    }
  }
  return cfg;
}

/// A TOML basic string.
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

/// A bare TOML key, or a quoted one.
std::string key_text(const std::string& k) {
  bool bare =
      !k.empty() && k.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "abcdefghijklmnopqrstuvwxyz"
                                        "0123456789_-") == std::string::npos;
  return bare ? k : quote(k);
}

} // namespace

result<config_file> load_config(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) {
    config_file cfg;
    cfg.path = path;
    return cfg;
  }
  std::ifstream in{path};
  if (!in)
    return config_error("cannot read " + path + ": " + std::strerror(errno));
  try {
    cpptoml::parser parser{in};
    return check(path, parser.parse());
  } catch (const cpptoml::parse_exception& e) {
    return config_error(path + ": " + e.what());
  }
}

std::string to_toml(const config_file& cfg) {
  std::ostringstream out;
  out << "# alloxctl configuration (docs/cli.md)\n";
  if (!cfg.current_profile.empty())
    out << "current_profile = " << quote(cfg.current_profile) << "\n";
  for (const auto& [name, keys] : cfg.profiles) {
    out << "\n[profile." << key_text(name) << "]\n";
    for (const auto& k : profile_keys())
      if (auto it = keys.find(k); it != keys.end())
        out << k << " = " << quote(it->second) << "\n";
  }
  return out.str();
}

namespace {

status make_dirs(const std::string& dir) {
  if (dir.empty())
    return ok();
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0)
    return ok();
  if (auto slash = dir.rfind('/'); slash != std::string::npos && slash > 0)
    if (auto s = make_dirs(dir.substr(0, slash)); !s)
      return s;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return config_error("cannot create " + dir + ": " + std::strerror(errno));
  return ok();
}

} // namespace

status save_config(const config_file& cfg) {
  auto slash = cfg.path.rfind('/');
  if (slash != std::string::npos)
    if (auto s = make_dirs(cfg.path.substr(0, slash)); !s)
      return s;
  auto tmp = cfg.path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return config_error("cannot write " + tmp + ": " + std::strerror(errno));
  auto text = to_toml(cfg);
  bool written = ::write(fd, text.data(), text.size()) ==
                 static_cast<ssize_t>(text.size());
  written = ::fsync(fd) == 0 && written;
  ::close(fd);
  if (!written || ::rename(tmp.c_str(), cfg.path.c_str()) != 0) {
    auto why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return config_error("cannot write " + cfg.path + ": " + why);
  }
  return ok();
}

result<settings> resolve(const global_flags& flags,
                         const std::function<const char*(const char*)>& env,
                         const config_file& cfg) {
  settings s;
  auto from_env = [&](const char* name) -> std::optional<std::string> {
    const char* v = env(name);
    if (v && *v)
      return std::string{v};
    return std::nullopt;
  };
  if (!flags.profile.empty())
    s.profile = {flags.profile, "flag"};
  else if (auto e = from_env("ALLOX_PROFILE"))
    s.profile = {*e, "env"};
  else if (!cfg.current_profile.empty())
    s.profile = {cfg.current_profile, "config"};
  else
    s.profile = {default_profile, "default"};
  const std::map<std::string, std::string>* profile = nullptr;
  // A profile that does not exist yet is empty: `config set` and `use`
  // create it; commands that talk to the daemon refuse it (app_state).
  if (auto it = cfg.profiles.find(s.profile.value); it != cfg.profiles.end())
    profile = &it->second;
  auto pick = [&](setting& out, const std::string& flag, const char* env_name,
                  const char* key, const std::string& fallback) {
    std::optional<std::string> e;
    if (env_name != nullptr)
      e = from_env(env_name);
    if (!flag.empty())
      out = {flag, "flag"};
    else if (e)
      out = {*e, "env"};
    else if (profile != nullptr && profile->count(key) > 0)
      out = {profile->at(key), "profile"};
    else
      out = {fallback, "default"};
  };
  pick(s.url, flags.url, "ALLOX_URL", "url", default_url);
  pick(s.token, flags.token, "ALLOX_WORKSPACE_TOKEN", "token", "");
  pick(s.output, flags.output, "ALLOX_OUTPUT", "output", "table");
  pick(s.agent, flags.agent, nullptr, "agent", "");
  pick(s.session, flags.session, nullptr, "session", "");
  if (s.output.value != "table" && s.output.value != "json" &&
      s.output.value != "yaml")
    return usage_error("output must be table, json or yaml, not '" +
                       s.output.value + "' (" + s.output.source + ")");
  return s;
}

} // namespace allox::ctl
