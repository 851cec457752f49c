// SPDX-License-Identifier: Apache-2.0
// alloxctl's configuration: a TOML file with profiles, and the settings in
// effect after flags, environment, profile and defaults were weighed (in
// that order).
//
//   current_profile = "default"
//
//   [profile.default]
//   url = "http://127.0.0.1:8092"
//   token = "..."
//   output = "table"
//   agent = "a"          # the current context (alloxctl use)
//   session = "s"
#pragma once

#include "cli/result.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace allox::ctl {

inline constexpr const char* default_url = "http://127.0.0.1:8092";
inline constexpr const char* default_profile = "default";

/// Keys a profile may hold; anything else in the file is an error, so a
/// typo does not silently fall back to a default.
const std::vector<std::string>& profile_keys();

struct config_file {
  std::string path;
  /// False when the file does not exist (all defaults).
  bool exists = false;
  std::string current_profile;
  /// profile name -> key -> value.
  std::map<std::string, std::map<std::string, std::string>> profiles;
};

/// $ALLOX_CONFIG, else $XDG_CONFIG_HOME/allox/config.toml, else
/// $HOME/.config/allox/config.toml.
std::string config_path(const std::function<const char*(const char*)>& env);

/// Reads and checks the file; a missing file is an empty configuration.
result<config_file> load_config(const std::string& path);

/// Writes the file atomically (temporary file, rename), mode 0600 because
/// it may hold a token; creates the directory.
status save_config(const config_file& cfg);

/// The TOML text of a configuration (stable: profiles and keys sorted).
std::string to_toml(const config_file& cfg);

/// What the command line said.
struct global_flags {
  std::string url, token, output, profile, agent, session;
};

/// One setting in effect and where it came from (flag, env, profile,
/// default).
struct setting {
  std::string value;
  std::string source;
};

struct settings {
  setting profile, url, token, output, agent, session;
};

/// Precedence: flag > environment > profile > default. Environment:
/// ALLOX_PROFILE, ALLOX_URL, ALLOX_WORKSPACE_TOKEN, ALLOX_OUTPUT. The
/// context (agent, session) comes from flags or the profile only.
result<settings> resolve(const global_flags& flags,
                         const std::function<const char*(const char*)>& env,
                         const config_file& cfg);

} // namespace allox::ctl
