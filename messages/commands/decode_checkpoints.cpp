// SPDX-License-Identifier: Apache-2.0
// Decoders of the checkpoint.* and session.rollback commands
// (messages/commands/checkpoints.hpp).
#include "messages/commands/checkpoints.hpp"

namespace allox::cmd {

checkpoint_list checkpoint_list::decode(params::reader& r) {
  checkpoint_list c;
  // Paging is optional: without `limit` the prototype's full list.
  c.cursor = r.optional_string("cursor");
  c.limit = r.optional_int("limit", 0);
  r.check(c.limit >= 0 && c.limit <= 10000, "limit must be 1..10000");
  return c;
}

checkpoint_describe checkpoint_describe::decode(params::reader& r) {
  checkpoint_describe c;
  c.checkpoint_id = r.required_string("checkpoint_id");
  return c;
}

checkpoint_diff checkpoint_diff::decode(params::reader& r) {
  checkpoint_diff c;
  c.from = r.required_string("from");
  // Absent: against current/; given, it must name a checkpoint.
  if (r.has("to"))
    c.to = r.required_string("to");
  c.cursor = r.optional_string("cursor");
  c.limit = r.optional_int("limit", 1000);
  r.check(c.limit >= 1 && c.limit <= 10000, "limit must be 1..10000");
  c.writers = r.optional_bool("writers", false);
  return c;
}

file_history file_history::decode(params::reader& r) {
  file_history c;
  c.path = r.required_string("path");
  c.cursor = r.optional_string("cursor");
  c.limit = r.optional_int("limit", 20);
  r.check(c.limit >= 1 && c.limit <= 1000, "limit must be 1..1000");
  return c;
}

checkpoint_create checkpoint_create::decode(params::reader& r) {
  checkpoint_create c;
  c.req = r.take(params::decode_checkpoint_create(r.params()));
  return c;
}

checkpoint_delete checkpoint_delete::decode(params::reader& r) {
  checkpoint_delete c;
  c.checkpoint_id = r.required_string("checkpoint_id");
  c.force = r.optional_bool("force", false);
  c.origin = r.origin();
  return c;
}

session_rollback session_rollback::decode(params::reader& r, bool after_reset,
                                          bool kill_default) {
  session_rollback c;
  c.req =
      r.take(params::decode_rollback(r.params(), after_reset, kill_default));
  c.after_reset = after_reset;
  return c;
}

} // namespace allox::cmd
