// SPDX-License-Identifier: Apache-2.0
// The turns facet of the SESSION actor: turn lifecycle events and the automatic
// checkpoint policy (turns.cpp, policy.cpp). Internal to actors/session/.
#pragma once

#include "actors/session/facets.hpp"

namespace allox::session_facets {

// -- turns (turns.cpp) --------------------------------------------------------

/// Restores the turn state and policies from the actor's init (its row).
void load_turns(self_ptr self);

/// turn.session_start: the baseline checkpoint (turn 0), once.
caf::result<turn_result> handle(self_ptr self,
                                const cmd::turn_session_start& c);

/// turn.message: captures the message of the next turn checkpoint.
caf::result<turn_result> handle(self_ptr self, const cmd::turn_message& c);

/// turn.end: a checkpoint per turn (not for duplicates, nor right after a
/// rollback).
caf::result<turn_result> handle(self_ptr self, const cmd::turn_end& c);

/// turn.status: the turn state and whether turns are enabled.
caf::result<turn_status_view> handle(self_ptr self, const cmd::turn_status& c);

/// A rollback is being committed: the next turn.end is skipped; the flag
/// is written in the rollback's own commit `w`.
void mark_rollback(self_ptr self, metadata_write& w);

// -- policy (policy.cpp) ------------------------------------------------------

/// The session's policy in force.
effective_policy policy_of(self_ptr self);

/// What an automatic checkpoint is taken for.
struct auto_request {
  /// The metadata's `event` and the result's.
  std::string event;
  std::string origin;
  std::string message;
  /// Added to {auto, event, timestamp}.
  json::object metadata;
};

/// Deletes the oldest automatic checkpoints beyond keep_auto (through
/// checkpoint.delete) and calls `done` with the ids deleted.
void prune(self_ptr self, std::function<void(std::vector<std::string>)> done);

/// Now as ISO-8601 UTC with microseconds (the metadata's timestamp).
std::string iso_now();

/// Takes an automatic checkpoint through checkpoint.create, prunes to
/// keep_auto, and calls `done` with the result; a failure does not block
/// (no checkpoint, its error) unless the policy is strict, then `done`
/// gets the error.
void auto_checkpoint(
    self_ptr self, auto_request req,
    std::function<void(expected<auto_checkpoint_result>)> done);

/// policy.get: the effective policy, where each field comes from.
caf::result<policy_view> handle(self_ptr self, const cmd::policy_get& c);

/// policy.set: changes the session's level; audited.
caf::result<policy_view> handle(self_ptr self, const cmd::policy_set& c);

/// The agent's level changed.
void on_agent_policy(self_ptr self, const cmd::agent_policy_changed& c);

/// (Re-)arms the interval timer for the policy in force.
void arm_interval(self_ptr self);

/// An interval tick: a checkpoint if current/ changed since the head.
void on_interval_tick(self_ptr self, const cmd::interval_tick& t);

/// A run's row is final: with auto_checkpoint_runs and exit code 0, a
/// checkpoint first (its result in the row's auto_checkpoint); then
/// `answer` (with the error of a strict failure).
void after_run(self_ptr self, const std::string& id,
               std::function<void(caf::error)> answer);

} // namespace allox::session_facets
