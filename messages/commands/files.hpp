// SPDX-License-Identifier: Apache-2.0
// Commands of a session's files facet (file.*): one struct per RPC action,
// decoded once by the RPC actor. Paths are as the caller sent them; the
// session checks and resolves them beneath its workspace.
#pragma once

#include "messages/commands/command.hpp"
#include "messages/records.hpp"
#include "messages/results/files.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace allox::cmd {

/// Most bytes one file.read returns, and one file.write takes (after
/// decoding): the RPC body limit (1 MiB) bounds both anyway.
inline constexpr int64_t max_file_chunk = 1 << 20;

/// file.stat {path}.
struct file_stat {
  static inline const char* name = "file.stat";
  static file_stat decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = file_entry;
  session_ref session;
  std::string path;
};

/// file.list {path?, recursive?, limit?, cursor?}.
struct file_list {
  static inline const char* name = "file.list";
  static file_list decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = dir_page;
  session_ref session;
  std::string path;
  bool recursive = false;
  int64_t limit = 1000;
  std::string cursor;
};

/// file.read {path, offset?, limit?, encoding?}.
struct file_read {
  static inline const char* name = "file.read";
  static file_read decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = read_slice;
  session_ref session;
  std::string path;
  int64_t offset = 0;
  int64_t limit = max_file_chunk;
  bool base64 = false;
};

/// file.write {path, data, encoding?, mode?, append?}; `data` decoded.
struct file_write {
  static inline const char* name = "file.write";
  static file_write decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = write_result;
  session_ref session;
  std::string path;
  std::string data;
  int64_t mode = 0644;
  bool append = false;
  std::string origin;
};

/// file.mkdir {path, parents?}.
struct file_mkdir {
  static inline const char* name = "file.mkdir";
  static file_mkdir decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = mkdir_result;
  session_ref session;
  std::string path;
  bool parents = false;
  std::string origin;
};

/// file.remove {path, recursive?}.
struct file_remove {
  static inline const char* name = "file.remove";
  static file_remove decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = remove_result;
  session_ref session;
  std::string path;
  bool recursive = false;
  std::string origin;
};

/// file.move {from, to}.
struct file_move {
  static inline const char* name = "file.move";
  static file_move decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = move_result;
  session_ref session;
  std::string from;
  std::string to;
  /// Replaces an existing file at `to` (never a directory), in one rename.
  bool replace = false;
  std::string origin;
};

/// file.search {pattern?, path?, glob?, regex?, limit?}: lines of the files
/// beneath `path` whose names match `glob` that contain `pattern` (a fixed
/// string, or a POSIX extended regular expression with `regex`); an empty
/// pattern lists the files whose names match. Bounded: `limit` matches, a fixed
/// number of files and bytes read; binary files are skipped.
struct file_search {
  static inline const char* name = "file.search";
  static file_search decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = search_result;
  session_ref session;
  std::string path;
  std::string pattern;
  /// fnmatch(3) pattern over each file's name; a pattern with a '/' is
  /// matched against the path below `path` instead.
  std::string glob;
  bool regex = false;
  int64_t limit = 200;
};

/// file.replace {path, old_string, new_string, expected_count?}: replaces
/// every occurrence of `old_string` in a regular file, in one rename, if
/// it occurs `expected_count` times (default 1); else nothing changes and
/// the error says how often it occurs.
struct file_replace {
  static inline const char* name = "file.replace";
  static file_replace decode(params::reader& r);
  /// What the session answers (the native front encodes it).
  using reply = replace_result;
  session_ref session;
  std::string path;
  std::string old_string;
  std::string new_string;
  int64_t expected_count = 1;
  std::string origin;
};

/// Watches directory `path` (and below it with `recursive`): the E2B
/// front's WatchDir and watchers. Sent by fronts only (no RPC action);
/// replies the watch's id. A session holds at most max_watches; a watch
/// ends with file.unwatch, a rollback (its tree is replaced) or the
/// session.
struct file_watch {
  static inline const char* name = "file.watch";
  using reply = watch_opened;
  session_ref session;
  std::string path;
  bool recursive = false;
};

/// The changes watch `watch_id` saw since it was read last; never waits.
struct file_watch_events {
  static inline const char* name = "file.watch_events";
  using reply = watch_changes;
  session_ref session;
  int64_t watch_id = 0;
};

/// Ends watch `watch_id`; replies its last changes.
struct file_unwatch {
  static inline const char* name = "file.unwatch";
  using reply = watch_changes;
  session_ref session;
  int64_t watch_id = 0;
};

/// Watches one session holds at once.
inline constexpr size_t max_watches = 32;

/// Most matches one file.search returns, and most bytes of a file that
/// file.replace edits.
inline constexpr int64_t max_search_matches = 10000;
inline constexpr int64_t max_replace_file = int64_t{16} << 20;

/// The start of a bulk transfer (PUT or GET /v1/files/...), sent by the
/// HTTP front end through RPC, never decoded from an RPC body: the session
/// checks it may and resolves the path.
struct file_transfer_begin {
  static inline const char* name = "file.transfer";
  using reply = transfer_begun;
  session_ref session;
  std::string path;
  bool upload = false;
};

/// The end of a bulk transfer, once the bytes moved: the session audits it.
struct file_transfer_end {
  static inline const char* name = "file.transfer";
  using reply = transfer_audited;
  session_ref session;
  std::string path;
  bool upload = false;
  bool tar = false;
  int64_t bytes = 0;
  int64_t entries = 0;
  /// The session's rollbacks when the transfer began (done: an upload
  /// that a rollback overtook landed in the replaced tree).
  int64_t epoch = 0;
  /// Who moved the bytes: "http" (PUT/GET /v1/files/...) or a front's name.
  std::string origin = "http";
  /// done: the files an upload wrote, beneath the workspace, when they are
  /// not `path` itself (a form upload's parts).
  std::vector<std::string> files;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_transfer_begin& x) {
  return f(caf::meta::type_name("file_transfer_begin"), x.session, x.path,
           x.upload);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_transfer_end& x) {
  return f(caf::meta::type_name("file_transfer_end"), x.session, x.path,
           x.upload, x.tar, x.bytes, x.entries, x.epoch, x.origin, x.files);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_stat& x) {
  return f(caf::meta::type_name("file_stat"), x.session, x.path);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_list& x) {
  return f(caf::meta::type_name("file_list"), x.session, x.path, x.recursive,
           x.limit, x.cursor);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_read& x) {
  return f(caf::meta::type_name("file_read"), x.session, x.path, x.offset,
           x.limit, x.base64);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_write& x) {
  return f(caf::meta::type_name("file_write"), x.session, x.path, x.data,
           x.mode, x.append, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_mkdir& x) {
  return f(caf::meta::type_name("file_mkdir"), x.session, x.path, x.parents,
           x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_remove& x) {
  return f(caf::meta::type_name("file_remove"), x.session, x.path, x.recursive,
           x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_move& x) {
  return f(caf::meta::type_name("file_move"), x.session, x.from, x.to,
           x.replace, x.origin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_watch& x) {
  return f(caf::meta::type_name("file_watch"), x.session, x.path, x.recursive);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_watch_events& x) {
  return f(caf::meta::type_name("file_watch_events"), x.session, x.watch_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_unwatch& x) {
  return f(caf::meta::type_name("file_unwatch"), x.session, x.watch_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_search& x) {
  return f(caf::meta::type_name("file_search"), x.session, x.path, x.pattern,
           x.glob, x.regex, x.limit);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_replace& x) {
  return f(caf::meta::type_name("file_replace"), x.session, x.path,
           x.old_string, x.new_string, x.expected_count, x.origin);
}

} // namespace allox::cmd
