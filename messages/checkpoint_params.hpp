// SPDX-License-Identifier: Apache-2.0
// Decoded parameters of the checkpoint and rollback actions, with the
// prototype's validation messages.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <caf/optional.hpp>

#include <cstdint>
#include <string>

namespace allox::params {

struct checkpoint_create {
  /// Empty when the caller asked for an automatic id (cp-<ns>).
  std::string checkpoint_id;
  /// None when absent or null ("" is a message).
  caf::optional<std::string> message;
  /// JSON text of an object; none when absent or null.
  caf::optional<std::string> metadata;
  bool pinned = false;
  std::string origin;
};

struct rollback {
  /// Exactly one of checkpoint_id / num_ancestors is set (num_ancestors 0
  /// means "not given").
  std::string checkpoint_id;
  int64_t num_ancestors = 0;
  bool scrub_runtime = true;
  bool kill_processes = false;
  std::string origin;
  /// Only for session.rollback_after_runtime_reset.
  std::string reset_token;
};

expected<checkpoint_create> decode_checkpoint_create(const json::object& p);

/// `kill_default` is the daemon's --kill-session-processes-on-rollback.
expected<rollback> decode_rollback(const json::object& p, bool after_reset,
                                   bool kill_default);

} // namespace allox::params
