// SPDX-License-Identifier: Apache-2.0
// Commands that never talk to the daemon: the configuration file and the
// current context (kubectl-style use/current/clear).
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <iostream>
#include <sys/stat.h>

namespace allox::ctl {

namespace {

/// The id rule of the daemon (docs/rpc.md), so a typo fails here.
bool valid_id(const std::string& id) {
  if (id.empty() || id.size() > 64 ||
      !std::isalnum(static_cast<unsigned char>(id[0])))
    return false;
  for (unsigned char c : id)
    if (!(std::isalnum(c) || c == '_' || c == '.' || c == '-'))
      return false;
  return true;
}

json::object context_of(const app_state& st) {
  auto opt = [](const setting& s) {
    return s.value.empty() ? json::value(nullptr) : json::value(s.value);
  };
  return {{"profile", st.cfg.profile.value},
          {"agent_id", opt(st.cfg.agent)},
          {"session_id", opt(st.cfg.session)}};
}

void print_context(app_state& st) {
  auto ctx = context_of(st);
  print_result(*st.out, st.st, ctx, [&] {
    std::string where = st.cfg.agent.value;
    if (!st.cfg.session.value.empty())
      where += "/" + st.cfg.session.value;
    *st.out << where << "  "
            << st.st.dim("(profile " + st.cfg.profile.value + ")") << "\n";
  });
}

int use_command(app_state& st, const std::string& target) {
  auto slash = target.find('/');
  auto agent = target.substr(0, slash);
  auto session = slash == std::string::npos ? "" : target.substr(slash + 1);
  if (!valid_id(agent) || (slash != std::string::npos && !valid_id(session)))
    return report(
        usage_error("use takes AGENT/SESSION or AGENT, not '" + target + "'"));
  auto& profile = st.file.profiles[st.cfg.profile.value];
  profile["agent"] = agent;
  if (session.empty())
    profile.erase("session");
  else
    profile["session"] = session;
  if (auto saved = save_config(st.file); !saved)
    return report(saved.error());
  st.cfg.agent = {agent, "profile"};
  st.cfg.session = {session, "profile"};
  print_context(st);
  return exit_ok;
}

int current_command(app_state& st) {
  if (st.cfg.agent.value.empty())
    return report(usage_error("no context: run `alloxctl use AGENT/SESSION`"));
  print_context(st);
  return exit_ok;
}

int clear_command(app_state& st) {
  if (auto it = st.file.profiles.find(st.cfg.profile.value);
      it != st.file.profiles.end()) {
    it->second.erase("agent");
    it->second.erase("session");
    if (auto saved = save_config(st.file); !saved)
      return report(saved.error());
  }
  st.cfg.agent = {"", "default"};
  st.cfg.session = {"", "default"};
  print_context(st);
  return exit_ok;
}

int init_command(app_state& st, bool force) {
  struct stat s {};
  if (!force && ::stat(st.file.path.c_str(), &s) == 0)
    return report(
        config_error(st.file.path + " exists; --force writes a fresh one"));
  config_file fresh;
  fresh.path = st.file.path;
  fresh.current_profile = default_profile;
  fresh.profiles[default_profile]["url"] =
      st.flags.url.empty() ? default_url : st.flags.url;
  if (auto saved = save_config(fresh); !saved)
    return report(saved.error());
  *st.out << st.file.path << "\n";
  return exit_ok;
}

int show_command(app_state& st, bool reveal) {
  const std::pair<const char*, const setting*> rows[] = {
      {"profile", &st.cfg.profile}, {"url", &st.cfg.url},
      {"token", &st.cfg.token},     {"output", &st.cfg.output},
      {"agent", &st.cfg.agent},     {"session", &st.cfg.session}};
  json::object o;
  for (const auto& [key, s] : rows) {
    auto value = s->value;
    if (std::string{key} == "token" && !value.empty() && !reveal)
      value = "********";
    o[key] = json::object{{"value", value}, {"source", s->source}};
  }
  json::object result{{"path", st.file.path}, {"settings", o}};
  print_result(*st.out, st.st, result, [&] {
    std::vector<json::object> lines;
    for (const auto& kv : o)
      lines.push_back(json::object{{"key", kv.key()},
                                   {"value", kv.value().at("value")},
                                   {"source", kv.value().at("source")}});
    std::vector<const json::object*> ptrs;
    for (const auto& l : lines)
      ptrs.push_back(&l);
    print_table(
        *st.out, st.st,
        {col("KEY", "key"), col("VALUE", "value"), col("SOURCE", "source")},
        ptrs);
    *st.out << st.st.dim("file: " + st.file.path) << "\n";
  });
  return exit_ok;
}

int set_command(app_state& st, const std::string& key,
                const std::string& value) {
  if (key == "current_profile") {
    st.file.current_profile = value;
    st.file.profiles[value]; // a profile to switch to
  } else {
    const auto& keys = profile_keys();
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      return report(usage_error("unknown key '" + key +
                                "': url, token, output, agent, session or "
                                "current_profile"));
    if (key == "output" && value != "table" && value != "json" &&
        value != "yaml")
      return report(usage_error("output must be table, json or yaml"));
    st.file.profiles[st.cfg.profile.value][key] = value;
  }
  if (auto saved = save_config(st.file); !saved)
    return report(saved.error());
  return exit_ok;
}

} // namespace

void add_local_commands(CLI::App& app, app_state& st,
                        std::function<int()>* run) {
  auto* cfg = app.add_subcommand("config", "the configuration file");
  cfg->require_subcommand(1);

  static bool force = false;
  auto* init = cfg->add_subcommand("init", "write a fresh configuration");
  init->add_flag("--force", force, "replace an existing file");
  init->callback([&st, run] {
    *run = [&st] {
      return init_command(st, force);
    };
  });

  static bool reveal = false;
  auto* show = cfg->add_subcommand(
      "show", "the settings in effect and where each comes from");
  show->add_flag("--show-token", reveal, "print the token itself");
  show->callback([&st, run] {
    *run = [&st] {
      return show_command(st, reveal);
    };
  });

  static std::string key, value;
  auto* set = cfg->add_subcommand(
      "set", "set a key of the profile (or current_profile)");
  set->add_option("KEY", key,
                  "url, token, output, agent, session or "
                  "current_profile")
      ->required();
  set->add_option("VALUE", value, "the value")->required();
  set->callback([&st, run] {
    *run = [&st] {
      return set_command(st, key, value);
    };
  });

  auto* path = cfg->add_subcommand("path", "where the configuration lives");
  path->callback([&st, run] {
    *run = [&st] {
      *st.out << st.file.path << "\n";
      return int{exit_ok};
    };
  });

  static std::string target;
  auto* use = app.add_subcommand(
      "use", "make AGENT/SESSION the context of session commands");
  use->add_option("AGENT/SESSION", target, "the context")->required();
  use->callback([&st, run] {
    *run = [&st] {
      return use_command(st, target);
    };
  });

  auto* current = app.add_subcommand("current", "the current context");
  current->callback([&st, run] {
    *run = [&st] {
      return current_command(st);
    };
  });

  auto* clear = app.add_subcommand("clear", "forget the current context");
  clear->callback([&st, run] {
    *run = [&st] {
      return clear_command(st);
    };
  });
}

} // namespace allox::ctl
