// SPDX-License-Identifier: Apache-2.0
// One command list per actor: every command the actor answers, in the
// order of its interface (messages/actors.hpp). The RPC front derives its
// routing rows from the commands with a decoder (cmd::is_action_v), and
// each actor derives its behaviour from its list, one handler overload
// per command. A command added to a list without a handler, or a list
// that drifts from the actor's typed interface, does not compile.
#pragma once

#include "messages/commands/agents.hpp"
#include "messages/commands/checkpoints.hpp"
#include "messages/commands/files.hpp"
#include "messages/commands/network.hpp"
#include "messages/commands/pause.hpp"
#include "messages/commands/runs.hpp"
#include "messages/commands/runtime.hpp"
#include "messages/commands/share.hpp"
#include "messages/commands/turns.hpp"

#include <caf/detail/type_list.hpp>

namespace allox::cmd {

/// What a SESSION answers (actors/session/, a facet per group).
using session_commands = caf::detail::type_list<
    // lifecycle (session.cpp, lifecycle.cpp)
    session_describe, session_delete, debug_fault,
    // checkpoints (checkpoints.cpp, rollback.cpp)
    checkpoint_list, checkpoint_describe, checkpoint_diff, file_history,
    checkpoint_create, checkpoint_delete, session_rollback, session_fork_into,
    // files (files.cpp)
    file_stat, file_list, file_read, file_write, file_mkdir, file_remove,
    file_move, file_transfer_begin, file_transfer_end, file_search,
    file_replace, file_watch, file_watch_events, file_unwatch,
    // runs (runs.cpp, run_queries.cpp, configure.cpp)
    session_configure, network_configure, process_start, process_get,
    process_list, process_stop, process_wait, process_input, process_resize,
    process_subscribe, process_output, process_events, process_tree,
    // network (network.cpp)
    network_status, port_connect,
    // pause and usage (pause.cpp)
    session_pause, session_resume, session_usage,
    // runtime (runtime.cpp)
    execution_acquire, execution_release, runtime_register_background,
    runtime_begin_reset, runtime_complete_reset, session_unfence,
    // turns and policy (turns.cpp, policy.cpp)
    turn_session_start, turn_message, turn_end, turn_status, policy_get,
    policy_set,
    // sharing (share.cpp)
    share_status, share_enable, share_disable, share_list, share_read,
    share_write, share_access>;

/// What an AGENT answers; AGENTS forwards each to the AGENT it names.
using agent_commands =
    caf::detail::type_list<agent_create, agent_describe, agent_delete,
                           session_create, session_fork, session_list,
                           session_delete_request, agent_debug_fault,
                           policy_get, policy_set>;

/// What AGENTS answers itself (store-level).
using agents_commands = caf::detail::type_list<store_initialize, agent_list>;

} // namespace allox::cmd
