// SPDX-License-Identifier: Apache-2.0
// The typed results of a session's turns facet: what turn.session_start,
// turn.message and turn.end answer (with the automatic checkpoint one of
// them took) and turn.status. The native wire's JSON of these is written
// in one place, messages/results/turns_json.hpp; its shapes are the
// reference adapter's (docs/rpc.md, "Turns").
#pragma once

#include "messages/results/checkpoints.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace allox {

/// An automatic checkpoint (a turn's, a successful run's, the interval's)
/// as the reference adapter reports it.
struct auto_checkpoint_result {
  /// The event that asked for it: session_start, turn_end, run_end,
  /// interval.
  std::string event;
  /// The id it was (or would have been) created under.
  std::string checkpoint_id;
  /// Created; none when the attempt failed and the policy is not strict
  /// (the failure does not block the turn).
  caf::optional<checkpoint_created> checkpoint;
  /// Why it was not created.
  std::string error;
  /// Older automatic checkpoints keep_auto deleted after it, oldest first.
  std::vector<std::string> pruned;
};

/// Why a turn event took no checkpoint.
enum class turn_skip : uint8_t {
  none,
  /// auto_checkpoint_turns is off.
  disabled,
  /// A turn id (or the session start) already seen.
  duplicate,
  /// The first turn.end after a rollback: the restored tree is already
  /// a checkpoint.
  rollback,
};

constexpr const char* to_string(turn_skip s) {
  switch (s) {
  case turn_skip::disabled:
    return "disabled";
  case turn_skip::duplicate:
    return "duplicate";
  case turn_skip::rollback:
    return "rollback";
  case turn_skip::none:
    break;
  }
  return "none";
}

/// turn.session_start, turn.message and turn.end.
struct turn_result {
  /// auto_checkpoint_turns as in force.
  bool enabled = false;
  /// session_start, message_received or turn_end.
  std::string event;
  /// turn.message only: a non-empty message was kept for the next turn.
  caf::optional<bool> captured;
  turn_skip skipped = turn_skip::none;
  /// turn.end skipped as a duplicate or after a rollback: its id (empty:
  /// null on the wire).
  std::string turn_id;
  /// The checkpoint taken (or attempted), when none was skipped.
  caf::optional<auto_checkpoint_result> checkpoint;
};

/// turn.status: the session's turn state.
struct turn_status_view {
  bool enabled = false;
  std::string agent_id;
  std::string session_id;
  int64_t turn_count = 0;
  bool session_started = false;
  bool skip_next_auto_checkpoint = false;
  /// Empty: none given (null on the wire).
  std::string runtime_session_id;
};

} // namespace allox

// Local messages only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::turn_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::turn_status_view)
