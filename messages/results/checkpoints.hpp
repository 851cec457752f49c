// SPDX-License-Identifier: Apache-2.0
// The typed results of checkpoint.list and checkpoint.describe: records of
// a session's checkpoint DAG. Their native JSON is written once, in
// messages/results/checkpoints_json.hpp.
#pragma once

#include "messages/records.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

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

} // namespace allox

// Local messages only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::checkpoint_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::checkpoint_page)
