// SPDX-License-Identifier: Apache-2.0
// Identifier rules. Every id is checked here before any path is formed.
#pragma once

#include "messages/errors.hpp"

#include <string>
#include <string_view>

namespace allox {

/// True when `id` matches ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$.
bool is_valid_id(std::string_view id);

/// Checks an id of the given kind ("agent", "session", "checkpoint", "run");
/// the error message is the prototype's: invalid <kind> id: '<value>'.
caf::error validate_id(std::string_view kind, std::string_view id);

/// A 32-character lowercase hex token from the kernel's random source.
std::string random_hex_token();

/// "<agent>/<session>", the form used in messages and audit keys.
std::string session_key(std::string_view agent_id, std::string_view session_id);

} // namespace allox
