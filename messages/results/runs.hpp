// SPDX-License-Identifier: Apache-2.0
// The typed results of a session's runs: what process.start, process.get,
// process.wait and process.stop answer, what live streams are told and what
// the catalog keeps. The native wire's JSON of these is written in one
// place, messages/results/runs_json.hpp.
#pragma once

#include "messages/json.hpp"
#include "messages/results/processes.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace allox {

/// Where a run is in its life. The wire spells each as its name.
enum class run_phase : uint8_t {
  /// Accepted; its first process is not running yet.
  starting,
  /// Its first process runs in the run's cgroup.
  running,
  /// Every process ended by itself and the cgroup emptied.
  completed,
  /// Killed on request (process.stop, a rollback, the run's timeout, an
  /// orderly shutdown), and the cgroup emptied.
  stopped,
  /// Could not start, left processes behind, or lost its trace.
  failed,
  /// Alive when the daemon died: its session stays fenced until
  /// session.unfence.
  interrupted,
};

/// True once the run can change no more.
constexpr bool is_final(run_phase p) {
  return p != run_phase::starting && p != run_phase::running;
}

/// The phase's wire name ("starting" ... "interrupted").
std::string_view to_string(run_phase p);

/// The phase a wire name names, or none.
caf::optional<run_phase> parse_run_phase(std::string_view s);

/// One run's row. Optional members are keys that only some runs have (or
/// that rows of earlier versions lack); they are written only when set, in
/// the order of the members below.
struct run_row {
  std::string run_id;
  std::string agent_id;
  std::string session_id;
  /// "disabled" or "ebpf": whether the run's processes are tracked.
  std::string backend = "disabled";
  std::string isolation = "bubblewrap";
  std::string boot_id;
  run_phase state = run_phase::starting;
  int64_t created_ns = 0;
  /// Process events received (tracked runs).
  int64_t event_count = 0;
  /// Tracked processes by process id (actors/session/process_map.hpp
  /// builds the map from the TRACKER's events).
  process_map processes;
  std::string audit_directory;
  bool trace_complete = false;
  int64_t cookie = 0;
  caf::optional<int64_t> root_pid;
  std::string cgroup;
  caf::optional<int64_t> root_exit_code;
  caf::optional<std::string> stop_reason;
  /// Processes were left in the cgroup: the session is fenced.
  bool session_fenced = false;
  bool lifecycle_complete = false;
  caf::optional<int64_t> finished_ns;
  caf::optional<std::string> error;
  caf::optional<std::string> provider_error;

  // -- keys only some rows have, in wire order ------------------------------

  /// "inherit", "isolated" or "proxy".
  caf::optional<std::string> network_mode;
  /// Effective cgroup limits, by control file.
  caf::optional<json::object> limits;
  /// The command the run was started with (process.start's argv); rows of
  /// earlier versions lack it.
  caf::optional<std::vector<std::string>> argv;
  /// "pipe" or "pty" for interactive runs.
  caf::optional<std::string> stdin_mode;
  caf::optional<int64_t> events_lost;
  caf::optional<std::string> root_process_id;
  /// The policy checkpoint taken after the run (auto_checkpoint_runs).
  caf::optional<json::object> auto_checkpoint;
  /// Keys this version does not know (a newer daemon's row), kept in
  /// order so that rewriting the row loses nothing.
  json::object unknown;
};

/// process.list: a session's runs, oldest first, without their process
/// maps; every run, or a page after a cursor.
struct run_list {
  std::string agent_id;
  std::string session_id;
  std::vector<run_row> runs;
  /// Asked for with a limit: the page's shape (has_more, next_cursor).
  bool paged = false;
  bool has_more = false;
  /// The page's last run id; none on an empty page.
  caf::optional<std::string> next_cursor;
};

/// process.output: a slice of a run's stdout or stderr log.
struct output_slice {
  std::string run_id;
  /// "stdout" or "stderr".
  std::string stream;
  int64_t offset = 0;
  /// Where the next slice starts (offset + the bytes read).
  int64_t next_offset = 0;
  /// The log's size when read.
  int64_t size = 0;
  /// The bytes read, as they are (a front decides how to show them).
  std::string data;
  /// The run is final and the slice reached the end of its log.
  bool eof = false;
  /// The run's phase when the slice was read.
  run_phase state = run_phase::running;
  /// The run's logs are gone: removed to make room in its session's share
  /// (or with an older daemon's run directory), so nothing can be read.
  bool logs_removed = false;
};

/// process.input: how much of the data the run took (the rest is sent
/// again later) and whether its input was closed.
struct input_result {
  std::string run_id;
  int64_t written = 0;
  bool eof = false;
};

/// process.resize: the terminal's size now.
struct resize_result {
  std::string run_id;
  uint16_t rows = 0;
  uint16_t cols = 0;
};

/// A live stream's subscription: the run's row now and the directory of
/// its logs, which the stream reads itself.
struct run_subscription {
  run_row row;
  std::string dir;
};

} // namespace allox

// Local messages only: rows never cross a network.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::run_row)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::output_slice)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::run_list)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::input_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::resize_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::run_subscription)
