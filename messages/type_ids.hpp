// SPDX-License-Identifier: Apache-2.0
// Every message type of the daemon, in a type ID block after the atoms'
// (messages/atoms.hpp), so that CAF knows each by name: in its logs, in
// the test DSL's printouts, and in add_message_types. A new message type
// is added here, and tests/messages/type_ids_test.cpp finds it by name.
//
// Local-only types whose content is a pointer or a function (rpc_request,
// stream_request, process_subscribe, reader_batch, lane_job) or a JSON
// tree are allowed with CAF_ALLOW_UNSAFE_MESSAGE_TYPE instead: they have
// no inspect() and never cross a process boundary.
#pragma once

#include "messages/actors.hpp"
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
#include "messages/policy.hpp"
#include "messages/records.hpp"
#include "messages/rpc.hpp"
#include "messages/stats.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/type_id.hpp>

CAF_BEGIN_TYPE_ID_BLOCK(allox_messages, caf::id_block::allox::end)
  // Replies other actors read (messages/actors.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::lease_granted))
  CAF_ADD_TYPE_ID(allox_messages, (allox::reset_begun))
  // Every actor's answer to atom::stats (messages/stats.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::actor_stats))
  // Catalog records and their queries (messages/records.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::agent_row))
  CAF_ADD_TYPE_ID(allox_messages, (allox::session_row))
  CAF_ADD_TYPE_ID(allox_messages, (allox::checkpoint_row))
  CAF_ADD_TYPE_ID(allox_messages, (allox::journal_row))
  CAF_ADD_TYPE_ID(allox_messages, (allox::session_head))
  CAF_ADD_TYPE_ID(allox_messages, (allox::session_settings))
  CAF_ADD_TYPE_ID(allox_messages, (allox::session_ref))
  CAF_ADD_TYPE_ID(allox_messages, (allox::audit_event))
  CAF_ADD_TYPE_ID(allox_messages, (allox::run_record))
  CAF_ADD_TYPE_ID(allox_messages, (allox::run_query))
  CAF_ADD_TYPE_ID(allox_messages, (allox::run_page))
  CAF_ADD_TYPE_ID(allox_messages, (allox::write_set_row))
  CAF_ADD_TYPE_ID(allox_messages, (allox::write_set_page))
  CAF_ADD_TYPE_ID(allox_messages, (allox::metadata_write))
  CAF_ADD_TYPE_ID(allox_messages, (allox::catalog_snapshot))
  CAF_ADD_TYPE_ID(allox_messages, (allox::audit_query))
  // Events between actors (messages/events.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::run_started))
  CAF_ADD_TYPE_ID(allox_messages, (allox::run_finished))
  CAF_ADD_TYPE_ID(allox_messages, (allox::run_timeout))
  CAF_ADD_TYPE_ID(allox_messages, (allox::wait_timeout))
  CAF_ADD_TYPE_ID(allox_messages, (allox::fence_lifted))
  CAF_ADD_TYPE_ID(allox_messages, (allox::process_record))
  CAF_ADD_TYPE_ID(allox_messages, (allox::process_event_batch))
  CAF_ADD_TYPE_ID(allox_messages, (allox::tracking_failure))
  CAF_ADD_TYPE_ID(allox_messages, (allox::write_record))
  CAF_ADD_TYPE_ID(allox_messages, (allox::write_record_batch))
  CAF_ADD_TYPE_ID(allox_messages, (allox::trace_summary))
  CAF_ADD_TYPE_ID(allox_messages, (allox::reader_failed))
  // Command parameters (messages/commands/checkpoints.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::params::checkpoint_create))
  CAF_ADD_TYPE_ID(allox_messages, (allox::params::rollback))
  // Commands: the store and agents (messages/commands/agents.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::store_initialize))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::agent_list))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::agent_create))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::agent_describe))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::agent_delete))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_create))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_fork))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_list))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_delete_request))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::agent_debug_fault))
  // Commands: checkpoints (messages/commands/checkpoints.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::checkpoint_list))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::checkpoint_describe))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::checkpoint_diff))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_history))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::checkpoint_create))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::checkpoint_delete))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_rollback))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_fork_into))
  // Commands: files (messages/commands/files.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_stat))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_list))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_read))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_write))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_mkdir))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_remove))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_move))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_transfer_begin))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_transfer_end))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_search))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_replace))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_watch))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_watch_events))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::file_unwatch))
  // Commands: runs (messages/commands/runs.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::limit_change))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_configure))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::network_configure))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::terminal_size))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::process_start))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::process_input))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::process_resize))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::process_get))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::process_list))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::process_stop))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::process_wait))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::process_output))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::process_events))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::process_tree))
  // Commands: leases, resets and the session itself
  // (messages/commands/runtime.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::execution_acquire))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::execution_release))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::runtime_register_background))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::runtime_begin_reset))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::runtime_complete_reset))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_unfence))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_describe))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_delete))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::debug_fault))
  // Checkpoint policies (messages/policy.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::checkpoint_policy))
  CAF_ADD_TYPE_ID(allox_messages, (allox::policy_change))
  // Commands: turns and policies (messages/commands/turns.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::turn_session_start))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::turn_message))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::turn_end))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::turn_status))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::policy_get))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::policy_set))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::agent_policy_changed))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::interval_tick))
  // Commands: session-to-session sharing (messages/commands/share.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::share_status))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::share_enable))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::share_disable))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::share_list))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::share_read))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::share_write))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::share_access))
  // Commands and events: proxy networking (messages/commands/network.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::network_status))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::port_connect))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::egress_attempt))
  // Commands: pause, resume, usage (messages/commands/pause.hpp).
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_pause))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_resume))
  CAF_ADD_TYPE_ID(allox_messages, (allox::cmd::session_usage))
CAF_END_TYPE_ID_BLOCK(allox_messages)

namespace allox {

/// Registers the atoms' block and every message type with `cfg`.
inline caf::actor_system_config&
add_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::allox>();
  cfg.add_message_types<caf::id_block::allox_messages>();
  return cfg;
}

} // namespace allox
