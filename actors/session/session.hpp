// SPDX-License-Identifier: Apache-2.0
// The SESSION actor: single owner of one session workspace
// (agents/<a>/workspace/sessions/<s>/): its checkpoint DAG, its mutations
// (checkpoint, rollback, delete) and its execution leases and fences. No
// other actor touches the session's subvolumes, and no lock is shared with
// any other session.
//
// The actor's code is split by what it serves (docs/architecture.md,
// "Session facets"); actors/session/facets.hpp and the facet headers
// gathered by handlers.hpp are its internal headers.
#pragma once

#include "actors/session/session_runs.hpp"
#include "actors/session/write_sets.hpp"
#include "guest/faults.hpp"
#include "guest/store/checkpoint_dag.hpp"
#include "guest/store/layout.hpp"
#include "messages/actors.hpp"
#include "messages/fork_signal.hpp"
#include "messages/policy.hpp"
#include "messages/results/sessions.hpp"
#include "messages/share.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <chrono>
#include <cstdint>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

namespace allox::os {
class dir_watch;
} // namespace allox::os

namespace allox {

/// A directory watch the session holds for a front (watches.cpp).
struct watch_slot {
  std::shared_ptr<os::dir_watch> watch;
  /// The workspace it lies in (current/).
  std::string root;
  /// The session's rollbacks when it was opened: a rollback replaces the
  /// tree it watches, and ends it.
  uint64_t epoch = 0;
};

/// What a session actor needs to (re)start.
struct session_init {
  session_row row;
  std::vector<checkpoint_row> checkpoints;
  uint32_t restarts = 0;
  store::layout paths;
  metadata_actor metadata;
  std::shared_ptr<const exec_config> exec;
  /// Runs interrupted by a daemon restart; they fence the session.
  std::vector<std::string> interrupted_runs;
  /// The owning AGENT, told when session.unfence lifts that fence (it
  /// hands the interrupted runs to every actor of the session until then).
  caf::actor_addr agent;
  /// The agent's checkpoint policy (catalog text; messages/policy.hpp).
  caf::optional<std::string> agent_policy{};
  /// Reads the committed Btrfs generation of current/ for the interval
  /// timer. Empty: os::committed_generation on a worker thread. Unit tests
  /// put an instant fake here, answered inline.
  std::function<expected<int64_t>(const std::string& current)>
      generation_probe{};
  /// The AGENTS actor, through which share.* requests reach their target
  /// session (actors/session/share.cpp).
  caf::actor_addr agents{};
  /// Checkpoints whose rows were committed unsynced, their intent records
  /// still on disk (a fork's baseline): synced by the idle work.
  std::vector<std::string> unsynced_intents{};
  /// A forked session's baseline, made on the source's lane after the
  /// fork's reply: the lane's first step waits for it, and session.delete
  /// too (messages/fork_signal.hpp). Invalid otherwise.
  fork_ready baseline_ready{};
  /// Baselines of forks from this session's checkpoints still being made
  /// (by an earlier incarnation's lane, after a restart).
  std::vector<fork_ready> forks_out{};
  /// Rows of live runs that outlived the daemon, to follow to their end
  /// (actors/session/adoption.cpp).
  std::vector<run_row> adopted_runs{};
};

/// A session's turn lifecycle (actors/session/turns.cpp): the reference
/// adapter's state, kept in the session's catalog row (turn_state) so it
/// survives a restart of the actor or the daemon.
struct turn_state {
  /// Turns checkpointed (or attempted) since the first turn.end.
  int64_t turn_count = 0;
  /// turn.session_start has taken (or attempted) the baseline.
  bool session_started = false;
  /// A rollback happened: the next turn.end takes no checkpoint.
  bool skip_next = false;
  /// The last user message, cut to 80 characters.
  std::string message;
  std::string runtime_session_id;
  /// Turn ids already ended, oldest first (at most max_seen_turn_ids).
  std::deque<std::string> seen_turn_ids;
};

/// How many ended turn ids a session remembers to refuse duplicates.
inline constexpr size_t max_seen_turn_ids = 1024;

/// Where a session is in its life.
enum class session_phase {
  /// Serving; no mutation runs.
  idle,
  /// A checkpoint.create/delete or rollback runs (one at a time).
  mutating,
  /// session.delete runs.
  deleting,
  /// Deleted, or retired so that its agent can be deleted.
  retired,
  /// A catalog write failed mid-operation; only a restart recovers it.
  fenced,
};

/// The phase's name, as system.dump shows it.
std::string_view to_string(session_phase p);

struct session_state {
  static inline const char* name = "session";

  // -- identity and lifecycle (session.cpp, lifecycle.cpp) -----------------

  /// What the actor was started with: the session row (its exec_settings
  /// follow session.configure), the store layout, the METADATA handle and
  /// the daemon's execution settings.
  session_init init;
  /// Where the session is in its life (system.dump prints it).
  session_phase phase = session_phase::idle;
  /// The running mutation, for the dump and conflict messages.
  std::string mutation;
  /// Why the session is fenced (phase `fenced`), for errors and the dump.
  std::string fence_reason;

  // -- checkpoints (checkpoints.cpp) ---------------------------------------

  /// The session's checkpoint DAG and its head.
  store::checkpoint_dag dag;
  /// Checkpoints whose catalog row is committed but not yet synced; their
  /// intent records stay until one durable commit covers them all, once
  /// the session has been idle for idle_delay (or enough have piled up).
  std::vector<std::string> unsynced_intents;

  // -- rollback (rollback.cpp) ---------------------------------------------

  /// Trees replaced by rollbacks (.discard-*), deleted once the session
  /// has been idle for idle_delay.
  std::vector<std::string> discards;

  // -- mutation lane and deferred work (checkpoints.cpp) -------------------

  /// The worker thread of the current burst of mutations (see
  /// actors/blocking.hpp), retired when the session goes idle. Shared with
  /// the clean-up that retires it when the actor ends.
  std::shared_ptr<caf::actor> lane = std::make_shared<caf::actor>();
  /// The worker thread of reads (log slices), retired with `lane`.
  std::shared_ptr<caf::actor> read_lane = std::make_shared<caf::actor>();
  /// A purge timer is pending (idle_work runs when it fires).
  bool idle_armed = false;
  /// When deferred work was last noted (arm_idle_work, after each mutation
  /// step); idle_work waits until the session has been idle for idle_delay.
  std::chrono::steady_clock::time_point last_mutation;

  // -- fork baselines (checkpoints.cpp, lifecycle.cpp) ----------------------

  /// Baselines of forks from this session's checkpoints, still being made
  /// on its lane after their reply: session.delete waits for them before
  /// it moves the checkpoints away.
  std::vector<fork_ready> forks_out;

  // -- runtime: leases, background executions, reset (runtime.cpp) ---------

  /// Execution leases (token -> acquired at), at most one.
  std::map<std::string, int64_t> leases;
  /// Background executions registered by outside launchers:
  /// execution_id -> sandbox_id.
  std::map<std::string, std::string> background;
  /// Non-empty while a runtime reset fences the session.
  std::string reset_token;

  // -- runs (runs.cpp, run_worker.cpp) -------------------------------------

  /// Tracked executions: the active run, those finished since start, the
  /// runs interrupted by a restart and the queue of row writes.
  session_runs runs;

  // -- write provenance (writes.cpp) ----------------------------------------

  /// What the runs changed, per interval between checkpoints.
  write_sets writes;
  /// current/'s subvolume id (0: not looked up since it was replaced).
  uint64_t write_subvol = 0;
  /// Write records received, and those the kernel lost (per session; the
  /// TRACKER counts them per cause).
  uint64_t write_records = 0;
  uint64_t write_records_lost = 0;
  /// The sealed intervals of earlier incarnations are back from the
  /// catalog; until then diffs that name writers wait in `writes_waiting`.
  bool writes_loaded = false;
  std::vector<std::function<void()>> writes_waiting;
  /// The homes runs were given (where they saw the workspace besides
  /// /workspace).
  std::set<std::string> run_homes;

  // -- watches (watches.cpp) ----------------------------------------------

  /// Directory watches by id (at most cmd::max_watches).
  std::map<int64_t, watch_slot> watches;
  int64_t next_watch = 1;

  // -- pause (pause.cpp) ---------------------------------------------------

  /// session.pause holds the session: no run starts until session.resume.
  bool paused = false;
  /// The session group held frozen since the pause (empty: its runs were
  /// stopped, or none was live); thawed by session.resume.
  std::string frozen_group;
  /// The runs frozen (or stopped) by the pause.
  std::vector<std::string> paused_runs;
  /// A pause is between its freeze and its checkpoint.
  bool pausing = false;

  // -- turns and policy (turns.cpp, policy.cpp) ----------------------------

  /// The turn lifecycle state (persisted on every change).
  turn_state turns;
  /// The agent's checkpoint policy and the session's own (policy.get/set).
  checkpoint_policy agent_policy;
  checkpoint_policy own_policy;
  /// Interval ticks carry the epoch of their arming; re-arming (a policy
  /// change) makes the older ticks stale.
  uint64_t interval_epoch = 0;
  /// Interval checkpoints taken, and ticks skipped because nothing changed
  /// (or the session was busy), for the dump and turn.status.
  uint64_t interval_checkpoints = 0;
  uint64_t interval_unchanged = 0;
  uint64_t interval_busy = 0;
  /// Automatic checkpoints deleted by keep_auto.
  uint64_t auto_pruned = 0;
  /// A turn's checkpoint is being taken; the next turns' checkpoints wait
  /// here in arrival order (turns.cpp).
  bool turn_checkpointing = false;
  std::deque<std::function<void()>> turn_waiting;

  // -- sharing (share.cpp) -------------------------------------------------

  /// The session's share policy in force (persisted on every change).
  share_policy share;
  /// The policy as the changes queued on the lane will leave it (disable
  /// keeps the scope and permission of an enable still being checked).
  share_policy share_next;
  /// share.list/read/write served for other sessions, and refused, for
  /// the dump.
  uint64_t share_served = 0;
  uint64_t share_refused = 0;

  // -- network (network.cpp) ----------------------------------------------

  /// Proxy mode: the namespace at the broker, made at the first run and
  /// kept until the mode changes or the actor ends.
  std::unique_ptr<proxy_attachment> proxy;
  /// Egress audit records waiting for the commit in flight (one commit
  /// per batch, whatever the rate of connections).
  std::vector<audit_event> egress_pending;
  bool egress_committing = false;

  // -- diagnostics (session.cpp) -------------------------------------------

  /// The action being handled, for the failure log.
  std::string handling;
  /// RPC requests received, for the dump.
  uint64_t requests = 0;
  /// Mutations that failed (checkpoint, rollback, delete), for the dump.
  uint64_t failures = 0;
  /// Checkpoints created by this actor, for the dump.
  uint64_t checkpoints_created = 0;
  /// Of those, taken while runs lived (their group frozen), for the dump.
  uint64_t live_checkpoints = 0;
  /// Rollbacks committed by this actor, for the dump.
  uint64_t rollbacks = 0;
  /// When the actor started, for the dump's uptime.
  std::chrono::steady_clock::time_point started;
  /// Fault points armed by debug.fault (tests).
  fault_set faults;

  const std::string& agent_id() const { return init.row.agent_id; }
  const std::string& session_id() const { return init.row.session_id; }
  std::string key() const;
};

/// How long a session must be idle before replaced trees are deleted and
/// new checkpoint rows are synced: a burst of rollbacks does not compete
/// with the Btrfs cleaner reclaiming its own earlier trees, and a burst of
/// checkpoints does not pay a catalog fsync each.
inline constexpr std::chrono::milliseconds idle_delay{1000};

/// Unsynced checkpoint rows that trigger a sync without waiting for idle.
/// Their intent records are durable meanwhile, so this only bounds what
/// start-up reads after a power cut; each such sync delays the snapshot it
/// meets on the disk (docs/benchmarks.md, "Turns").
inline constexpr size_t max_unsynced_intents = 256;

/// While the store's quotas are on, the replaced tree that makes this many
/// wait for the session's idle moment sends them all to be deleted at
/// once (rollback.cpp).
inline constexpr size_t max_quota_discards = 4;

session_actor::behavior_type
session(session_actor::stateful_pointer<session_state> self, session_init init);

/// A session as session.describe, session.create and session.fork show it.
session_view view_of(const session_row& row, const store::checkpoint_dag& dag);

} // namespace allox

// A watch opened on the read lane travels back to the actor.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::watch_slot)
