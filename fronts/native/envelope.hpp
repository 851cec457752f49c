// SPDX-License-Identifier: Apache-2.0
// The native wire's request envelope (docs/rpc.md): the body of
// POST /v1/rpc is {"action": "...", "params": {...}}; params may be left
// out or null. Its errors are the prototype's, word for word.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <string>
#include <string_view>

namespace allox::native {

struct envelope {
  std::string action;
  json::object params;
};

/// Decodes a request body; the error is `invalid_argument`, saying what
/// is wrong with it.
expected<envelope> decode_envelope(std::string_view body);

} // namespace allox::native
