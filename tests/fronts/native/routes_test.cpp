// SPDX-License-Identifier: Apache-2.0
// The RPC front's routing table, derived from the actors' command lists:
// every action served has a golden wire transcript, and every transcript
// names a served action.
#include "fronts/native/routing.hpp"
#include "messages/commands/lists.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>

using namespace allox;

namespace {

/// The actions with a transcript in tests/integration/golden/wire/ (the
/// files that are not an action's are the envelope and the daemon
/// without execution).
std::set<std::string> golden_actions() {
  std::set<std::string> out;
  for (const auto& e :
       std::filesystem::directory_iterator{ALLOX_WIRE_GOLDEN_DIR}) {
    auto name = e.path().stem().string();
    if (name != "envelope" && name != "no-execution" &&
        name != "no.such_action")
      out.insert(name);
  }
  return out;
}

template <class... Commands>
std::set<std::string> actions_of(caf::detail::type_list<Commands...>) {
  std::set<std::string> out;
  (
      [&out] {
        if constexpr (cmd::is_action_v<Commands>)
          out.insert(Commands::name);
      }(),
      ...);
  return out;
}

} // namespace

TEST_CASE("rpc routes: one row per served action, each with a golden "
          "transcript") {
  std::set<std::string> served;
  for (const auto& [action, fn] : rpc_detail::routes()) {
    CHECK(static_cast<bool>(fn));
    served.insert(std::string{action});
  }
  auto golden = golden_actions();
  // debug.fault arms fault points of test builds: no transcript.
  served.erase("debug.fault");
  for (const auto& action : served) {
    CAPTURE(action);
    CHECK(golden.count(action) == 1); // a served action without transcript
  }
  for (const auto& action : golden) {
    CAPTURE(action);
    CHECK(served.count(action) == 1); // a transcript of no action
  }
}

TEST_CASE("rpc routes: every decodable command of an actor's list is "
          "routed") {
  const auto& table = rpc_detail::routes();
  for (const auto& list :
       {actions_of(cmd::session_commands{}), actions_of(cmd::agent_commands{}),
        actions_of(cmd::agents_commands{})})
    for (const auto& action : list) {
      CAPTURE(action);
      CHECK(table.count(action) == 1);
    }
  // Commands only actors send have no row of their own.
  CHECK_FALSE(cmd::is_action_v<cmd::session_fork_into>);
  CHECK_FALSE(cmd::is_action_v<cmd::share_access>);
  CHECK_FALSE(cmd::is_action_v<cmd::file_transfer_begin>);
  CHECK_FALSE(cmd::is_action_v<cmd::file_transfer_end>);
}
