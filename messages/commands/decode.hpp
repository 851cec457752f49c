// SPDX-License-Identifier: Apache-2.0
// JSON parameters -> command structs, with the prototype's validation
// messages. The caller has decoded and validated the session ids already
// (they are the routing key); these decode the rest of each action.
#pragma once

#include "messages/commands/agents.hpp"
#include "messages/commands/checkpoints.hpp"
#include "messages/commands/files.hpp"
#include "messages/commands/network.hpp"
#include "messages/commands/runs.hpp"
#include "messages/commands/runtime.hpp"
#include "messages/commands/share.hpp"
#include "messages/commands/turns.hpp"
#include "messages/errors.hpp"
#include "messages/json.hpp"

namespace allox::cmd {

// -- checkpoints and rollback -------------------------------------------------

expected<checkpoint_list> decode_checkpoint_list(const json::object& p);
expected<checkpoint_describe> decode_checkpoint_describe(const json::object& p);
expected<checkpoint_diff> decode_checkpoint_diff(const json::object& p);
expected<checkpoint_create> decode_checkpoint_create(const json::object& p);
expected<checkpoint_delete> decode_checkpoint_delete(const json::object& p);

/// `kill_default` is the daemon's --kill-session-processes-on-rollback.
expected<session_rollback> decode_rollback(const json::object& p,
                                           bool after_reset, bool kill_default);

// -- runs ---------------------------------------------------------------------

expected<session_configure> decode_configure(const json::object& p);
/// network.configure {mode}: a session_configure of the mode alone.
expected<session_configure> decode_network_configure(const json::object& p);
expected<network_status> decode_network_status(const json::object& p);
expected<process_start> decode_process_start(const json::object& p);
expected<process_get> decode_process_get(const json::object& p);
expected<process_list> decode_process_list(const json::object& p);
expected<process_stop> decode_process_stop(const json::object& p);
expected<process_wait> decode_process_wait(const json::object& p);
expected<process_input> decode_process_input(const json::object& p);
expected<process_resize> decode_process_resize(const json::object& p);
expected<process_output> decode_process_output(const json::object& p);
expected<process_events> decode_process_events(const json::object& p);
expected<process_tree> decode_process_tree(const json::object& p);

// -- files ----------------------------------------------------------------------

expected<file_stat> decode_file_stat(const json::object& p);
expected<file_list> decode_file_list(const json::object& p);
expected<file_read> decode_file_read(const json::object& p);
expected<file_write> decode_file_write(const json::object& p);
expected<file_mkdir> decode_file_mkdir(const json::object& p);
expected<file_remove> decode_file_remove(const json::object& p);
expected<file_move> decode_file_move(const json::object& p);

// -- runtime and lifecycle ----------------------------------------------------

expected<execution_acquire> decode_execution_acquire(const json::object& p);
expected<execution_release> decode_execution_release(const json::object& p);
expected<runtime_register_background>
decode_register_background(const json::object& p);
expected<runtime_begin_reset> decode_begin_reset(const json::object& p);
expected<runtime_complete_reset> decode_complete_reset(const json::object& p);
expected<session_unfence> decode_unfence(const json::object& p);
expected<session_describe> decode_session_describe(const json::object& p);
expected<session_delete> decode_session_delete(const json::object& p);

// -- turns and policy ---------------------------------------------------------
// policy.get/set take an optional session_id: RPC decodes the ids.

expected<turn_session_start> decode_turn_session_start(const json::object& p);
expected<turn_message> decode_turn_message(const json::object& p);
expected<turn_end> decode_turn_end(const json::object& p);
expected<turn_status> decode_turn_status(const json::object& p);
expected<policy_get> decode_policy_get(const json::object& p);
expected<policy_set> decode_policy_set(const json::object& p);

// -- share ------------------------------------------------------------------
// `session` is the caller: RPC decodes its ids (the routing key).

expected<share_status> decode_share_status(const json::object& p);
expected<share_enable> decode_share_enable(const json::object& p);
expected<share_disable> decode_share_disable(const json::object& p);
expected<share_list> decode_share_list(const json::object& p);
expected<share_read> decode_share_read(const json::object& p);
expected<share_write> decode_share_write(const json::object& p);

// -- store and agents ---------------------------------------------------------
// These decode the ids too: AGENTS routes by the agent id, and the AGENT
// by the session id. debug.fault is decoded by RPC (guest/faults.hpp).

expected<store_initialize> decode_store_initialize(const json::object& p);
expected<agent_list> decode_agent_list(const json::object& p);
expected<agent_create> decode_agent_create(const json::object& p);
expected<agent_describe> decode_agent_describe(const json::object& p);
expected<agent_delete> decode_agent_delete(const json::object& p);
expected<session_create> decode_session_create(const json::object& p);
expected<session_fork> decode_session_fork(const json::object& p);
expected<session_list> decode_session_list(const json::object& p);
expected<session_delete_request>
decode_session_delete_request(const json::object& p);

} // namespace allox::cmd
