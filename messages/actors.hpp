// Every typed actor interface of the daemon.
//
// The actor tree (docs/architecture.md):
//   SUPERVISOR -> METADATA, AGENTS -> AGENT -> SESSION, RPC
// RPC actions arrive as (action, params) pairs, params always a JSON
// object (checked by the HTTP layer); each actor decodes the
// parameters of the actions it owns with the helpers in messages/params.hpp.
#pragma once

#include "messages/atoms.hpp"
#include "messages/json.hpp"
#include "messages/records.hpp"

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <cstdint>
#include <string>

namespace allox {

/// Every actor answers `dump` with a JSON description for system.dump.
using dump_client_actor = caf::typed_actor<
    // Describes the actor and, for supervisors, its children.
    caf::replies_to<atom::dump>::with<json::value>>;

/// The METADATA actor: sole owner and writer of the SQLite catalog.
using metadata_actor = caf::typed_actor<
    // Loads every row of the catalog (daemon start).
    caf::replies_to<atom::load>::with<catalog_snapshot>,
    // Loads one session's row and checkpoints (restarting its actor).
    caf::replies_to<atom::load, std::string,
                    std::string>::with<catalog_snapshot>,
    // Queues a batch of changes; replies once it is durably committed.
    caf::replies_to<atom::write, metadata_write>::with<caf::ok_atom>,
    // Commits every queued batch in one transaction (sent to itself).
    caf::reacts_to<atom::flush>,
    // Pages through the audit trail; replies {events, next_cursor, has_more}.
    caf::replies_to<atom::audit, audit_query>::with<json::value>,
    // Describes the actor for system.dump.
    caf::replies_to<atom::dump>::with<json::value>>;

/// The SESSION actor: owns one session's subvolume and state.
using session_actor = caf::typed_actor<
    // Handles one session-scoped RPC action; replies with its result.
    caf::replies_to<atom::rpc, std::string, json::value>::with<json::value>,
    // Stops (true) or resumes (false) taking work, so the owning agent can
    // delete the session; refused with `conflict` while the session is busy.
    caf::replies_to<atom::retire, bool>::with<caf::ok_atom>,
    // Deletes replaced trees once the session has been idle (sent to itself).
    caf::reacts_to<atom::purge>,
    // A run's first process is running in the session cgroup (run, pid).
    caf::reacts_to<atom::started, std::string, int64_t>,
    // A run ended: (run, exit code, cgroup empty, error).
    caf::reacts_to<atom::finished, std::string, int64_t, bool, std::string>,
    // A run's timeout expired (sent to itself).
    caf::reacts_to<atom::timeout, std::string>,
    // Describes the actor for system.dump.
    caf::replies_to<atom::dump>::with<json::value>>;

/// The AGENT actor: owns one agent workspace and supervises its sessions.
using agent_actor = caf::typed_actor<
    // Handles one agent-scoped RPC action; replies with its result.
    caf::replies_to<atom::rpc, std::string, json::value>::with<json::value>,
    // Returns the actor owning a session, or a `not_found` error.
    caf::replies_to<atom::session, std::string>::with<session_actor>,
    // Describes the actor and its sessions for system.dump.
    caf::replies_to<atom::dump>::with<json::value>>;

/// The AGENTS actor: the registry of agent actors.
using agents_actor = caf::typed_actor<
    // Reconciles the store with the catalog and spawns every agent and
    // session actor; replies {recovered_sessions, adopted, purged}.
    caf::replies_to<atom::load>::with<json::value>,
    // Handles store- and agent-level RPC actions; replies with the result.
    caf::replies_to<atom::rpc, std::string, json::value>::with<json::value>,
    // Returns the actor owning agent/session, or a `not_found` error.
    caf::replies_to<atom::session, std::string,
                    std::string>::with<session_actor>,
    // Describes the registry and every agent for system.dump.
    caf::replies_to<atom::dump>::with<json::value>>;

/// The RPC actor: bridge from the HTTP thread to the owning actors.
using rpc_actor = caf::typed_actor<
    // Serves one validated request; the reply goes back through the
    // reply_channel under the same ticket.
    caf::reacts_to<atom::rpc, uint64_t, std::string, json::value>,
    // Answers requests that outlived rpc_timeout (sent to itself).
    caf::reacts_to<atom::tick>,
    // Writes the full system dump to the log (SIGUSR1).
    caf::reacts_to<atom::log>,
    // Describes the actor (routing cache, pending requests) for system.dump.
    caf::replies_to<atom::dump>::with<json::value>>;

/// The SUPERVISOR: root of the tree; owns METADATA, AGENTS and RPC.
using supervisor_actor = caf::typed_actor<
    // Returns the RPC actor once the tree is up.
    caf::replies_to<atom::rpc>::with<rpc_actor>,
    // Returns the AGENTS actor (start-up and tests).
    caf::replies_to<atom::agent>::with<agents_actor>,
    // Describes the whole actor tree for system.dump.
    caf::replies_to<atom::dump>::with<json::value>>;

} // namespace allox
