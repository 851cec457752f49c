// SPDX-License-Identifier: Apache-2.0
// The configuration file and the precedence of settings: flag >
// environment > profile > default. No daemon needed.
#include "cli/config.hpp"
#include "cli/format.hpp"
#include "tests/cli/ctl.hpp"

#include <doctest/doctest.h>

#include <map>

using namespace allox;
using namespace allox::ctl;
using allox::test::ctl_result;
using allox::test::read_file;
using allox::test::temp_dir;
using allox::test::write_file;

namespace {

auto env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

config_file two_profiles() {
  config_file cfg;
  cfg.path = "/x/config.toml";
  cfg.current_profile = "dev";
  cfg.profiles["dev"] = {{"url", "http://dev:1"}, {"token", "dev-token"}};
  cfg.profiles["prod"] = {{"url", "http://prod:2"}, {"output", "yaml"}};
  return cfg;
}

} // namespace

TEST_CASE("config: flag > env > profile > default") {
  auto cfg = two_profiles();
  auto s = resolve({}, env_of({}), cfg);
  REQUIRE(s);
  CHECK(s->profile.value == "dev");
  CHECK(s->profile.source == "config");
  CHECK(s->url.value == "http://dev:1");
  CHECK(s->url.source == "profile");
  CHECK(s->output.value == "table");
  CHECK(s->output.source == "default");

  s = resolve({},
              env_of({{"ALLOX_URL", "http://env:3"},
                      {"ALLOX_WORKSPACE_TOKEN", "env-token"}}),
              cfg);
  CHECK(s->url.value == "http://env:3");
  CHECK(s->url.source == "env");
  CHECK(s->token.value == "env-token");

  global_flags flags;
  flags.url = "http://flag:4";
  s = resolve(flags, env_of({{"ALLOX_URL", "http://env:3"}}), cfg);
  CHECK(s->url.value == "http://flag:4");
  CHECK(s->url.source == "flag");

  // The profile itself: flag > ALLOX_PROFILE > current_profile > default.
  s = resolve({}, env_of({{"ALLOX_PROFILE", "prod"}}), cfg);
  CHECK(s->url.value == "http://prod:2");
  CHECK(s->output.value == "yaml");
  CHECK(s->token.value.empty());
  flags = {};
  flags.profile = "dev";
  s = resolve(flags, env_of({{"ALLOX_PROFILE", "prod"}}), cfg);
  CHECK(s->url.value == "http://dev:1");
  s = resolve({}, env_of({}), config_file{});
  CHECK(s->url.value == default_url);
  CHECK(s->profile.value == "default");

  flags = {};
  flags.output = "xml";
  CHECK(resolve(flags, env_of({}), cfg).error().exit == exit_usage);
}

TEST_CASE("config: the file is strict and survives a round trip") {
  temp_dir dir{"allox-ctl-"};
  auto path = dir / "nested/config.toml";
  auto cfg = two_profiles();
  cfg.path = path;
  cfg.profiles["dev"]["token"] = "with \"quotes\" and \\";
  REQUIRE(save_config(cfg));
  auto back = load_config(path);
  REQUIRE(back);
  CHECK(back->current_profile == "dev");
  CHECK(back->profiles == cfg.profiles);

  auto missing = load_config(dir / "none.toml");
  REQUIRE(missing);
  CHECK_FALSE(missing->exists);

  for (const char* bad :
       {"[profile.x]\nurl = 3\n", "[profile.x]\nuri = \"a\"\n",
        "colour = \"yes\"\n", "[profile.x\n"}) {
    write_file(dir / "bad.toml", bad);
    auto r = load_config(dir / "bad.toml");
    CHECK_FALSE(r);
    CHECK(r.error().exit == exit_config);
  }
}

TEST_CASE("config: yaml quotes what would read back as something else") {
  json::value v = json::parse(
      R"({"a":"plain","b":"true","c":"12","d":"","e":"x: y","f":[1,{"g":null}],"h":{},"i":[]})");
  CHECK(to_yaml(v) == "a: plain\n"
                      "b: \"true\"\n"
                      "c: \"12\"\n"
                      "d: \"\"\n"
                      "e: \"x: y\"\n"
                      "f:\n"
                      "  - 1\n"
                      "  - g: null\n"
                      "h: {}\n"
                      "i: []\n");
}

TEST_CASE("config: alloxctl config init, set, show and path") {
  allox::test::ctl_process c;
  auto path = c.config_path();
  CHECK(c.run({"config", "path"}).out == path + "\n");
  REQUIRE(c.run({"config", "init"}).code == 0);
  CHECK(c.run({"config", "init"}).code == exit_config);
  REQUIRE(c.run({"config", "set", "url", "http://profile:1"}).code == 0);
  CHECK(c.run({"config", "set", "colour", "x"}).code == exit_usage);
  auto show = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"-o", "json"});
    args.insert(args.end(), {"config", "show"});
    auto r = c.run(args);
    REQUIRE(r.code == 0);
    auto o = json::parse(r.out).as_object().at("settings").as_object();
    return std::string{o.at("url").at("value").as_string()} + " " +
           std::string{o.at("url").at("source").as_string()};
  };
  CHECK(show({}) == "http://profile:1 profile");
  c.env["ALLOX_URL"] = "http://env:2";
  CHECK(show({}) == "http://env:2 env");
  CHECK(show({"--url", "http://flag:3"}) == "http://flag:3 flag");
  c.env.erase("ALLOX_URL");
  // A second profile, made current.
  REQUIRE(
      c.run({"--profile", "b", "config", "set", "url", "http://b:4"}).code ==
      0);
  REQUIRE(c.run({"config", "set", "current_profile", "b"}).code == 0);
  CHECK(show({}) == "http://b:4 profile");
  CHECK(show({"--profile", "default"}) == "http://profile:1 profile");
  // The token is masked unless asked for.
  REQUIRE(c.run({"config", "set", "token", "t0p"}).code == 0);
  CHECK(c.run({"config", "show"}).out.find("t0p") == std::string::npos);
  CHECK(c.run({"config", "show", "--show-token"}).out.find("t0p") !=
        std::string::npos);
  CHECK(read_file(path).find("[profile.b]") != std::string::npos);
}
