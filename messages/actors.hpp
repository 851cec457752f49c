// SPDX-License-Identifier: Apache-2.0
// Every typed actor interface of the daemon.
//
// The actor tree (docs/architecture.md):
//   SUPERVISOR -> METADATA, AGENTS -> AGENT -> SESSION, RPC
// RPC actions arrive as one command struct each (messages/commands/),
// decoded once by the RPC actor's routing tables: session-scoped ones at
// the SESSION, store- and agent-level ones at AGENTS (which forwards the
// agent-level ones to the AGENT they name).
#pragma once

#include "messages/atoms.hpp"
#include "messages/commands/agents.hpp"
#include "messages/commands/checkpoints.hpp"
#include "messages/commands/files.hpp"
#include "messages/commands/network.hpp"
#include "messages/commands/pause.hpp"
#include "messages/commands/runs.hpp"
#include "messages/commands/runtime.hpp"
#include "messages/commands/share.hpp"
#include "messages/commands/turns.hpp"
#include "messages/events.hpp"
#include "messages/json.hpp"
#include "messages/records.hpp"
#include "messages/results/admin.hpp"
#include "messages/results/runs.hpp"
#include "messages/results/sessions.hpp"
#include "messages/stats.hpp"

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <cstdint>
#include <string>

namespace allox {

/// Every actor answers `stats` with what it reports about itself, typed;
/// system.dump and /metrics are both rendered from it (messages/stats.hpp).
using stats_client_actor = caf::typed_actor<
    // The actor's stats and, for supervisors, its children's.
    caf::replies_to<atom::stats>::with<actor_stats>>;

/// The METADATA actor: sole owner and writer of the SQLite catalog.
using metadata_actor = caf::typed_actor<
    // Loads every row of the catalog (daemon start).
    caf::replies_to<atom::load>::with<catalog_snapshot>,
    // Loads one agent's row, sessions and checkpoints (restarting its
    // actor).
    caf::replies_to<atom::load, std::string>::with<catalog_snapshot>,
    // Loads one session's row and checkpoints (restarting its actor).
    caf::replies_to<atom::load, std::string,
                    std::string>::with<catalog_snapshot>,
    // Queues a batch of changes; replies once it is durably committed.
    caf::replies_to<atom::write, metadata_write>::with<caf::ok_atom>,
    // Commits every queued batch in one transaction (sent to itself).
    caf::reacts_to<atom::flush>,
    // Checkpoints the write-ahead log once no commit came for a while
    // (sent to itself).
    caf::reacts_to<atom::tick>,
    // Pages through the audit trail; replies {events, next_cursor, has_more}.
    caf::replies_to<atom::audit, audit_query>::with<audit_page>,
    // One run by id, or a page of a session's runs.
    caf::replies_to<atom::runs, run_query>::with<run_page>,
    // One session's checkpoints' write sets (write provenance).
    caf::replies_to<atom::writes, session_ref>::with<write_set_page>,
    // Its stats, for system.dump and /metrics.
    caf::replies_to<atom::stats>::with<actor_stats>>;

/// The CHECKPOINTS facet of a SESSION (actors/session/checkpoints.cpp,
/// rollback.cpp): its checkpoint DAG and the mutations of current/.
using session_checkpoints_actor = caf::typed_actor<
    // Lists the checkpoints, all of them or one page.
    caf::replies_to<cmd::checkpoint_list>::with<checkpoint_page>,
    // Describes one checkpoint (by id, unique prefix or alias).
    caf::replies_to<cmd::checkpoint_describe>::with<checkpoint_view>,
    // Paths changed between two checkpoints, or one and current/.
    caf::replies_to<cmd::checkpoint_diff>::with<diff_page>,
    // The checkpoints that changed a path, with their writers.
    caf::replies_to<cmd::file_history>::with<history_page>,
    // Snapshots current/ into a new checkpoint.
    caf::replies_to<cmd::checkpoint_create>::with<checkpoint_created>,
    // Deletes a checkpoint; its children move to its parent.
    caf::replies_to<cmd::checkpoint_delete>::with<checkpoint_deleted>,
    // Replaces current/ with a writable snapshot of a checkpoint.
    caf::replies_to<cmd::session_rollback>::with<rollback_result>,
    // Snapshots a checkpoint into a new session's current/ (session.fork).
    caf::replies_to<cmd::session_fork_into>::with<fork_current_made>,
    // Deletes replaced trees once the session has been idle (sent to itself).
    caf::reacts_to<atom::purge>>;

/// The RUNS facet of a SESSION (actors/session/runs.cpp, run_worker.cpp):
/// sandboxed runs in the session's cgroup.
using session_runs_actor = caf::typed_actor<
    // Sets the session's network mode and limits for later runs.
    caf::replies_to<cmd::session_configure>::with<settings_view>,
    // Sets the network mode alone; replies as network.status.
    caf::replies_to<cmd::network_configure>::with<network_status_view>,
    // Starts a run; replies with its row once its first process runs.
    caf::replies_to<cmd::process_start>::with<run_row>,
    // The row of a run, live or from its history.
    caf::replies_to<cmd::process_get>::with<run_row>,
    // Every run of the session.
    caf::replies_to<cmd::process_list>::with<run_list>,
    // Kills a run's tree; replies with the final row.
    caf::replies_to<cmd::process_stop>::with<run_row>,
    // Waits for a run to end; replies with its row then (or at the timeout).
    caf::replies_to<cmd::process_wait>::with<run_row>,
    // Bytes (or the end) for a run's stdin or terminal; replies {written}.
    caf::replies_to<cmd::process_input>::with<input_result>,
    // A terminal run's new size.
    caf::replies_to<cmd::process_resize>::with<resize_result>,
    // A process.wait reached its timeout (sent to itself).
    caf::reacts_to<wait_timeout>,
    // Subscribes a live stream to a run's state changes; replies {row, dir}.
    caf::replies_to<cmd::process_subscribe>::with<run_subscription>,
    // A slice of a run's stdout or stderr.
    caf::replies_to<cmd::process_output>::with<output_slice>,
    // A page of a run's process events.
    caf::replies_to<cmd::process_events>::with<event_page>,
    // A run's process tree, nested from its root.
    caf::replies_to<cmd::process_tree>::with<process_tree_view>,
    // A run's first process is running in the session cgroup (its worker).
    caf::reacts_to<run_started>,
    // A run ended, and whether its cgroup emptied (its worker).
    caf::reacts_to<run_finished>,
    // A run's timeout expired (sent to itself).
    caf::reacts_to<run_timeout>>;

/// The FILES facet of a SESSION (actors/session/files.cpp): the files of
/// its workspace, resolved strictly beneath it.
using session_files_actor = caf::typed_actor<
    // Type, size, mode and time of one path.
    caf::replies_to<cmd::file_stat>::with<file_entry>,
    // A directory's entries (all levels with recursive), a page at a time.
    caf::replies_to<cmd::file_list>::with<dir_page>,
    // A range of a regular file, as UTF-8 or base64.
    caf::replies_to<cmd::file_read>::with<read_slice>,
    // Replaces (temp file + rename) or appends to a regular file.
    caf::replies_to<cmd::file_write>::with<write_result>,
    // Creates a directory (and its parents).
    caf::replies_to<cmd::file_mkdir>::with<mkdir_result>,
    // Removes a file, a symlink, or a directory (tree with recursive).
    caf::replies_to<cmd::file_remove>::with<remove_result>,
    // Renames a path; never over an existing one.
    caf::replies_to<cmd::file_move>::with<move_result>,
    // Begins a bulk transfer (the path resolved) or audits a finished one.
    caf::replies_to<cmd::file_transfer_begin>::with<transfer_begun>,
    caf::replies_to<cmd::file_transfer_end>::with<transfer_audited>,
    // Lines matching a pattern in the files beneath a directory, bounded.
    caf::replies_to<cmd::file_search>::with<search_result>,
    // An exact-string edit of a regular file, if the count matches.
    caf::replies_to<cmd::file_replace>::with<replace_result>,
    // Opens a watch on a directory (inotify), for fronts that stream changes.
    caf::replies_to<cmd::file_watch>::with<watch_opened>,
    // The changes a watch saw since it was read last; never waits.
    caf::replies_to<cmd::file_watch_events>::with<watch_changes>,
    // Ends a watch, with its last changes.
    caf::replies_to<cmd::file_unwatch>::with<watch_changes>>;
/// The TRACKING facet of a SESSION (actors/session/tracking.cpp): what the
/// TRACKER tells the session about its tracked runs.
using session_tracking_actor = caf::typed_actor<
    // Process events of the session's runs, one message per reader batch.
    caf::reacts_to<process_event_batch>,
    // Runs whose trace the TRACKER cannot vouch for: failed and fenced.
    caf::reacts_to<tracking_failure>,
    // Write records of the session's runs, one message per reader batch.
    caf::reacts_to<write_record_batch>>;

/// The TRACKER (actors/tracker.cpp): owns the BPF probe and the reader
/// thread, attributes each run's cgroup to a cookie, and fans every batch
/// of process events out to the sessions owning them.
using tracker_actor = caf::typed_actor<
    // Tracks the cgroup at a path as run `cookie` of a session; replies
    // once the kernel attributes the cgroup's first process to it.
    caf::replies_to<atom::track, std::string, uint64_t,
                    session_tracking_actor>::with<caf::ok_atom>,
    // Drains and untracks run `cookie` (its cgroup is empty); replies
    // with its final counters once every record arrived, or at a deadline.
    caf::replies_to<atom::untrack, uint64_t>::with<trace_summary>,
    // A batch of events from the reader thread.
    caf::reacts_to<reader_batch>,
    // The reader thread stopped on an error.
    caf::reacts_to<reader_failed>,
    // Loads the probe again after a failure (sent to itself, backed off).
    caf::reacts_to<atom::restart>,
    // Re-checks the pending drains (sent to itself).
    caf::reacts_to<atom::tick>,
    // Starts a new write generation: a session sealed its write set, so
    // every (process, inode, op) is recorded again from now on.
    caf::reacts_to<atom::seal>,
    // Arms a fault point of the probe or reader (test builds).
    caf::replies_to<cmd::debug_fault>::with<fault_armed>,
    // Its stats and counters, for system.dump, /metrics and tracker.status.
    caf::replies_to<atom::stats>::with<actor_stats>>;

/// The RUNTIME facet of a SESSION (actors/session/runtime.cpp): execution
/// leases, background executions of outside launchers, runtime resets.
using session_runtime_actor = caf::typed_actor<
    // Hands out the session's one execution lease.
    caf::replies_to<cmd::execution_acquire>::with<lease_granted>,
    // Returns a lease; replies {released}.
    caf::replies_to<cmd::execution_release>::with<lease_released>,
    // Records a background execution that blocks rollbacks.
    caf::replies_to<cmd::runtime_register_background>::with<
        background_registered>,
    // Fences the session for a runtime reset.
    caf::replies_to<cmd::runtime_begin_reset>::with<reset_begun>,
    // Lifts the reset fence; replies {completed, success}.
    caf::replies_to<cmd::runtime_complete_reset>::with<reset_completed>,
    // Clears every lease, registration and reset (operator's way out).
    caf::replies_to<cmd::session_unfence>::with<unfence_result>>;

/// The TURNS facet of a SESSION (actors/session/turns.cpp, policy.cpp):
/// turn lifecycle events and the automatic checkpoint policy.
using session_turns_actor = caf::typed_actor<
    // Baseline checkpoint of a runtime session, once (turn 0).
    caf::replies_to<cmd::turn_session_start>::with<turn_result>,
    // Remembers the user message for the next turn checkpoint.
    caf::replies_to<cmd::turn_message>::with<turn_result>,
    // A checkpoint at the end of a turn (duplicates, after a rollback: none).
    caf::replies_to<cmd::turn_end>::with<turn_result>,
    // The session's turn state.
    caf::replies_to<cmd::turn_status>::with<turn_status_view>,
    // The session's effective policy and where each field comes from.
    caf::replies_to<cmd::policy_get>::with<policy_view>,
    // Sets or clears fields of the session's policy.
    caf::replies_to<cmd::policy_set>::with<policy_view>,
    // The agent's policy changed (its AGENT).
    caf::reacts_to<cmd::agent_policy_changed>,
    // An interval checkpoint is due (sent to itself).
    caf::reacts_to<cmd::interval_tick>>;

/// The SHARE facet of a SESSION (actors/session/share.cpp): the session's
/// share policy, its share requests as the caller (handed to the target's
/// SESSION once its own policy allows them), and other sessions' accesses
/// to its files as the target.
using session_share_actor = caf::typed_actor<
    // The session's share policy.
    caf::replies_to<cmd::share_status>::with<share_view>,
    // Opts the session in (its scope checked on its lane); durable, audited.
    caf::replies_to<cmd::share_enable>::with<share_view>,
    // Opts the session out, keeping scope and permission; durable, audited.
    caf::replies_to<cmd::share_disable>::with<share_view>,
    // Lists a directory of a target session's scope (as the caller).
    caf::replies_to<cmd::share_list>::with<share_listing>,
    // Reads a file of a target session's scope (as the caller).
    caf::replies_to<cmd::share_read>::with<share_content>,
    // Replaces a file of a target session's scope (as the caller).
    caf::replies_to<cmd::share_write>::with<share_written>,
    // Serves another session's list/read/write on this session's files (as
    // the target), on its lane, audited in its trail.
    caf::replies_to<cmd::share_access>::with<share_answer>>;

/// The NETWORK facet of a SESSION (actors/session/network.cpp): its proxy
/// namespace at the egress broker, and the broker's audit records.
using session_network_actor = caf::typed_actor<
    // Mode, namespace, egress policy and live connection counts.
    caf::replies_to<cmd::network_status>::with<network_status_view>,
    // A socket connected to a port a process of the session listens on, in
    // its network namespace (the E2B front's port forwarding).
    caf::replies_to<cmd::port_connect>::with<socket_handle>,
    // A connection attempt the broker relayed or refused (its loop thread).
    caf::reacts_to<cmd::egress_attempt>>;

/// The PAUSE facet of a SESSION (actors/session/pause.cpp): its processes
/// held frozen (or stopped) with a checkpoint of its files, and its usage.
using session_pause_actor = caf::typed_actor<
    // Freezes (or stops) the session's runs and checkpoints its files.
    caf::replies_to<cmd::session_pause>::with<pause_result>,
    // Thaws a paused session's runs.
    caf::replies_to<cmd::session_resume>::with<resume_result>,
    // CPU, memory and processes of its cgroup; its workspace's disk use.
    caf::replies_to<cmd::session_usage>::with<usage_report>>;

/// The SESSION actor: single owner of one session's subvolume and state,
/// composed of its facets (actors/session/).
using session_actor = caf::typed_actor<
    // Describes the session (ids, paths, checkpoint ids, head).
    caf::replies_to<cmd::session_describe>::with<session_view>,
    // Deletes the session (sent by its AGENT); the actor then ends.
    caf::replies_to<cmd::session_delete>::with<session_deleted>,
    // Arms a fault at a named point of this actor (test builds).
    caf::replies_to<cmd::debug_fault>::with<fault_armed>,
    // Stops (true) or resumes (false) taking work, so the owning agent can
    // delete the session; refused with `conflict` while the session is busy.
    caf::replies_to<atom::retire, bool>::with<caf::ok_atom>>::
    extend_with<session_checkpoints_actor, session_runs_actor,
                session_files_actor, session_tracking_actor,
                session_runtime_actor, session_turns_actor, session_share_actor,
                session_network_actor, session_pause_actor, stats_client_actor>;

/// The commands of one agent: served by its AGENT, and by AGENTS, which
/// forwards them to that AGENT (creating the agent for agent.create and
/// session.create).
using agent_commands_actor = caf::typed_actor<
    // Creates the agent's directories if missing and audits the call.
    caf::replies_to<cmd::agent_create>::with<agent_view>,
    // Describes the agent workspace, its creation time and its sessions.
    caf::replies_to<cmd::agent_describe>::with<agent_view>,
    // Deletes every session, then the agent; the AGENT then ends.
    caf::replies_to<cmd::agent_delete>::with<agent_deleted>,
    // Creates a session (directories, subvolume, row) and spawns its actor.
    caf::replies_to<cmd::session_create>::with<session_view>,
    // Creates a session from a checkpoint of another of the agent's.
    caf::replies_to<cmd::session_fork>::with<session_forked>,
    // Lists the agent's session ids.
    caf::replies_to<cmd::session_list>::with<session_ids>,
    // Deletes a session through its actor, then forgets it.
    caf::replies_to<cmd::session_delete_request>::with<session_deleted>,
    // Arms a fault at a named point of the AGENT (test builds).
    caf::replies_to<cmd::agent_debug_fault>::with<fault_armed>,
    // The agent's checkpoint policy (policy.get without a session_id).
    caf::replies_to<cmd::policy_get>::with<policy_view>,
    // Changes the agent's checkpoint policy and tells its sessions.
    caf::replies_to<cmd::policy_set>::with<policy_view>>;

/// The AGENT actor: owns one agent workspace and supervises its sessions.
using agent_actor = caf::typed_actor<
    // Returns the actor owning a session, or a `not_found` error.
    caf::replies_to<atom::session, std::string>::with<session_actor>,
    // A session lifted the fence of its interrupted runs (its actor).
    caf::reacts_to<fence_lifted>>::extend_with<agent_commands_actor,
                                               stats_client_actor>;

/// The AGENTS actor: the registry of agent actors.
using agents_actor = caf::typed_actor<
    // Reconciles the store with the catalog and spawns every agent and
    // session actor; replies what recovery did.
    caf::replies_to<atom::load>::with<recovery_summary>,
    // Returns the actor owning agent/session, or a `not_found` error.
    caf::replies_to<atom::session, std::string,
                    std::string>::with<session_actor>,
    // Checks the store and audits the call; replies {root, recovered_sessions}.
    caf::replies_to<cmd::store_initialize>::with<store_initialized>,
    // Lists every agent id.
    caf::replies_to<cmd::agent_list>::with<agent_ids>>::
    extend_with<agent_commands_actor, stats_client_actor>;

/// The RPC actor: the native front's bridge to the owning actors.
using rpc_actor = caf::typed_actor<
    // Serves one request of the native wire; its reply goes to the
    // request's reply function, exactly once.
    caf::reacts_to<rpc_request>,
    // Opens a live stream of a run (GET /v1/stream); answered like a
    // request.
    caf::reacts_to<stream_request>,
    // Begins or ends a bulk file transfer (PUT/GET /v1/files/...);
    // answered like a request.
    caf::reacts_to<transfer_request>,
    // Answers requests that outlived rpc_timeout (sent to itself).
    caf::reacts_to<atom::tick>,
    // Writes the full system dump to the log (SIGUSR1).
    caf::reacts_to<atom::log>,
    // Its stats (routing cache, pending requests), for system.dump and
    // /metrics.
    caf::replies_to<atom::stats>::with<actor_stats>>;

/// The SUPERVISOR: root of the tree; owns METADATA, AGENTS and RPC.
using supervisor_actor = caf::typed_actor<
    // Returns the RPC actor once the tree is up.
    caf::replies_to<atom::rpc>::with<rpc_actor>,
    // Returns the AGENTS actor (start-up and tests).
    caf::replies_to<atom::agent>::with<agents_actor>,
    // The stats of the whole actor tree, for system.dump and /metrics.
    caf::replies_to<atom::stats>::with<actor_stats>>;

} // namespace allox
