// SPDX-License-Identifier: Apache-2.0
// Shared by the decoder files of messages/commands/. Internal.
#pragma once

#include "messages/errors.hpp"

#include <string>

namespace allox::cmd {

/// An `invalid_argument` error with `msg`.
inline caf::error invalid(std::string msg) {
  return make_error(errc::invalid_argument, std::move(msg));
}

} // namespace allox::cmd
