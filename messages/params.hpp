// SPDX-License-Identifier: Apache-2.0
// Decoding of RPC parameters with the prototype's validation messages.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace allox::params {

/// Default `origin` of mutating calls when the caller gives none.
inline constexpr std::string_view default_origin = "allox-control-plane";

/// A non-empty string parameter: "missing string parameter: <name>".
expected<std::string> required_string(const json::object& p,
                                      std::string_view name);

/// A required string that must also satisfy the id rule for `kind`.
expected<std::string> required_id(const json::object& p, std::string_view name,
                                  std::string_view kind);

/// A JSON boolean or the default: "<name> must be a boolean".
expected<bool> optional_bool(const json::object& p, std::string_view name,
                             bool fallback);

/// A JSON integer (booleans rejected) or the default; errors say
/// "<name> must be an integer".
expected<int64_t> optional_int(const json::object& p, std::string_view name,
                               int64_t fallback);

/// A string, absent or null: "<name> must be a string".
expected<std::string> optional_string(const json::object& p,
                                      std::string_view name,
                                      std::string fallback = {});

/// True when the key is present and not null.
bool has(const json::object& p, std::string_view name);

/// The `origin` parameter, stringified; default_origin when absent.
std::string origin(const json::object& p);

} // namespace allox::params
