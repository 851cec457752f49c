// SPDX-License-Identifier: Apache-2.0
// The typed results of the checkpoint actions: records of a session's
// checkpoint DAG, the created and deleted ones, and diff pages. Their native
// JSON is written once, in messages/results/checkpoints_json.hpp.
#pragma once

#include "messages/records.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace allox {

/// One checkpoint as the DAG knows it: its catalog row and its children,
/// in creation order (the head's list ends with the live marker).
struct checkpoint_record {
  checkpoint_row row;
  std::vector<std::string> child_ids;
};

/// checkpoint.describe: a record, and whether it is the session's head.
struct checkpoint_view {
  checkpoint_record record;
  bool is_head = false;
};

/// checkpoint.list: all of a session's checkpoints, or one page of them,
/// in creation order.
struct checkpoint_page {
  std::string agent_id;
  std::string session_id;
  caf::optional<std::string> head;
  /// Every present checkpoint's id; only in the full list (a page would
  /// otherwise be as large as the whole list).
  caf::optional<std::vector<std::string>> checkpoint_ids;
  /// A page was asked for (`limit`): has_more and next_cursor are shown.
  bool paged = false;
  bool has_more = false;
  std::vector<checkpoint_record> checkpoints;
};

/// checkpoint.create: the new checkpoint's row (the reply shows its ids,
/// its parent and its metadata).
struct checkpoint_created {
  checkpoint_row row;
};

/// checkpoint.delete: the checkpoint deleted (its children moved to its
/// parent).
struct checkpoint_deleted {
  std::string agent_id;
  std::string session_id;
  std::string checkpoint_id;
};

/// How a path differs between two trees.
enum class path_change_kind { added, modified, deleted };

/// A process of a tracked run that changed a path (write provenance).
struct change_writer {
  /// The daemon's own change, serving a request: its action ("file.write",
  /// "file.upload"...) and the front it came through ("rpc", "e2b",
  /// "mcp"); the run fields are then empty.
  std::string action;
  std::string origin;
  std::string run_id;
  /// "<boot id>:<start ns>:<pid>", and the pid.
  std::string process_id;
  uint32_t pid = 0;
  /// The run's command (process.start's argv; the kernel records no
  /// process's own arguments).
  caf::optional<std::vector<std::string>> run_argv;
  /// The program the process last executed, when its exec was seen.
  caf::optional<std::string> exe;
  /// What it did: "write", "create", "truncate", "unlink", "rename"...
  std::vector<std::string> ops;
};

/// One changed path of a diff.
struct path_change {
  /// Relative to the workspace root, without a leading slash.
  std::string path;
  path_change_kind change = path_change_kind::modified;
  /// file, directory, symlink or other.
  std::string type;
  /// With `writers`: who changed it, or why nobody is named
  /// ("untracked", "loss", "not_recorded").
  std::vector<change_writer> writers;
  caf::optional<std::string> unattributed;
};

/// How many paths of a whole diff (not only the page) changed each way.
struct diff_counts {
  int64_t added = 0;
  int64_t modified = 0;
  int64_t deleted = 0;
};

/// What the diff read to find the changes (the Btrfs generation walk or a
/// full comparison).
struct diff_cost {
  std::string method;
  uint64_t changed_inodes = 0;
  uint64_t compared_paths = 0;
  uint64_t listed_dirs = 0;
};

/// checkpoint.diff: one page of the paths changed between a checkpoint and
/// another one, or current/ (`to` absent), ordered by path.
struct diff_page {
  std::string agent_id;
  std::string session_id;
  std::string from;
  caf::optional<std::string> to;
  /// The common ancestor whose generation bounded the walk, if any.
  caf::optional<std::string> base_checkpoint;
  std::vector<path_change> changes;
  diff_counts counts;
  /// The last path of this page (the next page's cursor); none if empty.
  caf::optional<std::string> next_cursor;
  bool has_more = false;
  diff_cost cost;
  /// The changes carry writers (checkpoint.diff {writers: true}).
  bool with_writers = false;
};

/// One checkpoint that changed a path (file.history): how, and who.
struct history_entry {
  std::string checkpoint_id;
  /// The checkpoint it was compared with; none for the first one.
  caf::optional<std::string> parent_id;
  int64_t created_at_ns = 0;
  /// The path's change from the parent to this checkpoint, with its
  /// writers (or why none is named).
  path_change change;
};

/// file.history: the checkpoints that changed a path, newest first.
struct history_page {
  std::string agent_id;
  std::string session_id;
  std::string path;
  std::vector<history_entry> entries;
  /// The last checkpoint looked at (the next page's cursor) when more
  /// may follow.
  caf::optional<std::string> next_cursor;
  bool has_more = false;
};

/// session.rollback (and rollback_after_runtime_reset): the checkpoint
/// current/ was restored from.
struct rollback_result {
  std::string agent_id;
  std::string session_id;
  std::string checkpoint_id;
  /// current/ relative to the store root.
  std::string relative_workspace;
  /// Runtime entries scrubbed from the restored tree (scrub_runtime).
  std::vector<std::string> removed_runtime_entries;
  /// Runs killed first (kill_processes); absent when none were asked to be.
  caf::optional<std::vector<std::string>> terminated_process_runs;
  /// keep_pre_rollback was on: the checkpoint made of the replaced tree,
  /// or none and why.
  bool keep_asked = false;
  caf::optional<std::string> pre_rollback_checkpoint_id;
  caf::optional<std::string> pre_rollback_error;
};

/// The wire's name of a change ("added", "modified", "deleted").
const char* to_string(path_change_kind k);

/// Counts one change of a whole diff.
inline void count(diff_counts& c, path_change_kind k) {
  switch (k) {
  case path_change_kind::added:
    ++c.added;
    break;
  case path_change_kind::modified:
    ++c.modified;
    break;
  case path_change_kind::deleted:
    ++c.deleted;
    break;
  }
}

} // namespace allox

// Local messages only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::checkpoint_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::checkpoint_page)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::checkpoint_created)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::checkpoint_deleted)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::diff_page)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::history_page)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::rollback_result)
