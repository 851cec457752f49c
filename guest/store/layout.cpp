// SPDX-License-Identifier: Apache-2.0
#include "guest/store/layout.hpp"

namespace allox::store {

namespace {

std::string cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (auto p : parts)
    out += p;
  return out;
}

} // namespace

std::string layout::rel_agent_workspace(std::string_view a) {
  return cat({"agents/", a, "/workspace"});
}

std::string layout::rel_agent_shared(std::string_view a) {
  return cat({"agents/", a, "/workspace/shared"});
}

std::string layout::rel_session(std::string_view a, std::string_view s) {
  return cat({"agents/", a, "/workspace/sessions/", s});
}

std::string layout::rel_current(std::string_view a, std::string_view s) {
  return cat({"agents/", a, "/workspace/sessions/", s, "/current"});
}

std::string layout::agent_dir(std::string_view a) const {
  return cat({root, "/agents/", a});
}

std::string layout::agent_workspace(std::string_view a) const {
  return cat({root, "/", rel_agent_workspace(a)});
}

std::string layout::agent_shared(std::string_view a) const {
  return cat({root, "/", rel_agent_shared(a)});
}

std::string layout::sessions_dir(std::string_view a) const {
  return cat({root, "/agents/", a, "/workspace/sessions"});
}

std::string layout::session_dir(std::string_view a, std::string_view s) const {
  return cat({root, "/", rel_session(a, s)});
}

std::string layout::current(std::string_view a, std::string_view s) const {
  return cat({root, "/", rel_current(a, s)});
}

std::string layout::checkpoints_dir(std::string_view a,
                                    std::string_view s) const {
  return cat({root, "/", rel_session(a, s), "/checkpoints"});
}

std::string layout::checkpoint(std::string_view a, std::string_view s,
                               std::string_view c) const {
  return cat({root, "/", rel_session(a, s), "/checkpoints/", c});
}

} // namespace allox::store
