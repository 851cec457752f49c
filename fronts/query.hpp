// SPDX-License-Identifier: Apache-2.0
// A request target's query, as the fronts read it (E2B's list filters and
// signed URLs, MCP's default session).
#pragma once

#include <string>
#include <string_view>

namespace allox::fronts {

/// Percent-decodes; false on a malformed escape. `plus_space`: '+' is a
/// space (form encoding).
bool percent_decode(std::string_view in, std::string& out,
                    bool plus_space = false);

/// Parameter `name` of `query` (the target after '?'), percent-decoded
/// with '+' as a space; empty when absent or malformed.
std::string query_param(std::string_view query, std::string_view name);

} // namespace allox::fronts
