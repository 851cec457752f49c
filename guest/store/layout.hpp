// SPDX-License-Identifier: Apache-2.0
// Where things live inside the store root (prototype-compatible layout):
//
//   <root>/agents/<a>/workspace/{shared/, sessions/<s>/{current/,
//   checkpoints/<id>/}}  and  <root>/.allox/ (metadata, never rolled back)
//
// Every function takes ids that were already validated.
#pragma once

#include <string>
#include <string_view>

namespace allox::store {

struct layout {
  std::string root; // absolute, no trailing slash

  // -- relative paths (as reported over RPC) ---------------------------------
  static std::string rel_agent_workspace(std::string_view a);
  static std::string rel_agent_shared(std::string_view a);
  static std::string rel_session(std::string_view a, std::string_view s);
  static std::string rel_current(std::string_view a, std::string_view s);

  // -- absolute paths ---------------------------------------------------------
  std::string agents_dir() const { return root + "/agents"; }
  std::string agent_dir(std::string_view a) const;
  std::string agent_workspace(std::string_view a) const;
  std::string agent_shared(std::string_view a) const;
  std::string sessions_dir(std::string_view a) const;
  std::string session_dir(std::string_view a, std::string_view s) const;
  std::string current(std::string_view a, std::string_view s) const;
  std::string checkpoints_dir(std::string_view a, std::string_view s) const;
  std::string checkpoint(std::string_view a, std::string_view s,
                         std::string_view c) const;
  std::string metadata_dir() const { return root + "/.allox"; }
  std::string database() const { return metadata_dir() + "/allox.db"; }
};

/// Prefix of directories being deleted; never a valid id, so never listed.
inline constexpr std::string_view trash_prefix = ".trash-";

/// Where forks of earlier releases staged their new current/ until both
/// snapshots existed; start-up recovery still finishes such a fork
/// (guest/store/fork_recovery.cpp).
inline constexpr std::string_view fork_current_name = ".fork-current";

/// A fork's mark, from before its current/ until its baseline exists:
/// start-up recovery makes a missing baseline only where it finds one
/// (guest/store/fork_recovery.cpp).
inline constexpr std::string_view fork_pending_name = ".fork-pending";

/// A session's marks of uploads in progress (guest/store/upload_marks.hpp).
inline constexpr std::string_view upload_marks_name = ".uploads";

} // namespace allox::store
