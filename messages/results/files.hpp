// SPDX-License-Identifier: Apache-2.0
// The typed results of the file.* actions. The OS adapters
// (guest/os/workspace_files.hpp) return these and know no wire; the native
// wire's JSON of each is written once, in messages/results/files_json.hpp.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace allox {

/// What a path is; a final symlink is described, never followed.
enum class file_kind : uint8_t { file, directory, symlink, other };

/// The wire name of a kind ("file", "directory", "symlink", "other").
std::string_view to_string(file_kind k);

/// One path's type, size, permission bits and modification time
/// (file.stat, and each entry of file.list).
struct file_entry {
  std::string path;
  file_kind kind = file_kind::other;
  int64_t size = 0;
  /// Permission bits (07777).
  int64_t mode = 0;
  int64_t mtime_ns = 0;
};

/// A page of a directory's entries, sorted by path (file.list).
struct dir_page {
  std::string path;
  std::vector<file_entry> entries;
  bool has_more = false;
  /// The last entry's path when there are more.
  caf::optional<std::string> next_cursor;
};

/// A range of a regular file (file.read).
struct read_slice {
  std::string path;
  int64_t offset = 0;
  /// The file's size.
  int64_t size = 0;
  bool eof = false;
  /// `data` is base64 (else the bytes, valid UTF-8 or not).
  bool base64 = false;
  std::string data;
};

/// A file written (file.write): its size afterwards.
struct write_result {
  std::string path;
  int64_t size = 0;
};

/// A directory made (file.mkdir).
struct mkdir_result {
  std::string path;
};

/// A path removed (file.remove): how many entries went.
struct remove_result {
  std::string path;
  int64_t removed = 0;
};

/// A path renamed (file.move).
struct move_result {
  std::string from;
  std::string to;
};

/// One line of a file that matched a file.search pattern.
struct search_match {
  std::string path;
  /// 1-based.
  int64_t line = 0;
  /// The line, cut at max_search_line bytes.
  std::string text;
};

/// What file.search found beneath a directory: matching lines (or, with
/// no pattern, the files whose names match the glob), sorted by path.
struct search_result {
  std::string path;
  std::vector<search_match> matches;
  /// Paths of the files with at least one match (or whose name matched).
  std::vector<std::string> files;
  int64_t files_scanned = 0;
  /// A bound was reached (matches, files scanned or bytes read): there
  /// may be more.
  bool truncated = false;
};

/// What happened to a path under a watch (E2B's event types).
enum class change_kind : uint8_t { create, write, remove, rename, chmod };

/// The wire name of a change ("create" ... "chmod").
std::string_view to_string(change_kind k);

/// One change under a watched directory.
struct file_change {
  /// The path below the watched directory.
  std::string name;
  change_kind kind = change_kind::write;
};

/// A watch opened (file.watch): its id within the session.
struct watch_opened {
  int64_t watch_id = 0;
  std::string path;
};

/// The changes a watch saw since it was read last (file.watch_events).
struct watch_changes {
  int64_t watch_id = 0;
  std::vector<file_change> changes;
  /// The kernel's queue overflowed: changes were lost.
  bool lost = false;
};

/// An exact-string edit made (file.replace).
/// The start of a bulk transfer: where its bytes go or come from.
struct transfer_begun {
  /// The tree the path is beneath (current/ or the agent's shared/).
  std::string root;
  /// The path beneath `root`.
  std::string rel;
  /// The path as the caller names it.
  std::string path;
  /// The session's rollbacks so far: the end tells an upload a rollback
  /// overtook.
  int64_t epoch = 0;
  bool shared = false;
  /// Where interrupted uploads leave their marks.
  std::string uploads_dir;
};

/// The end of a bulk transfer: its audit record is queued.
struct transfer_audited {};

struct replace_result {
  std::string path;
  /// Occurrences replaced.
  int64_t replacements = 0;
  /// The file's size afterwards.
  int64_t size = 0;
};

} // namespace allox

// Local messages only: results never cross a network.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::file_entry)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::dir_page)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::read_slice)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::write_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::mkdir_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::remove_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::move_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::search_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::replace_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::transfer_begun)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::transfer_audited)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::watch_opened)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::watch_changes)
