// SPDX-License-Identifier: Apache-2.0
// Decoders of the execution.*, runtime.* and session.unfence/describe
// commands (messages/commands/runtime.hpp).
#include "messages/commands/runtime.hpp"

namespace allox::cmd {

execution_acquire execution_acquire::decode(params::reader&) {
  return {};
}

execution_release execution_release::decode(params::reader& r) {
  execution_release c;
  c.lease_token = r.required_string("lease_token");
  return c;
}

runtime_register_background
runtime_register_background::decode(params::reader& r) {
  runtime_register_background c;
  c.sandbox_id = r.required_string("sandbox_id");
  c.execution_id = r.required_string("execution_id");
  return c;
}

runtime_begin_reset runtime_begin_reset::decode(params::reader& r) {
  runtime_begin_reset c;
  // Absent stays none: the session applies the daemon's default.
  if (r.has("kill_processes"))
    c.kill_processes = r.optional_bool("kill_processes", false);
  return c;
}

runtime_complete_reset runtime_complete_reset::decode(params::reader& r) {
  runtime_complete_reset c;
  c.reset_token = r.required_string("reset_token");
  c.success = r.optional_bool("success", false);
  return c;
}

session_unfence session_unfence::decode(params::reader& r) {
  session_unfence c;
  c.origin = r.origin();
  return c;
}

session_describe session_describe::decode(params::reader&) {
  return {};
}

} // namespace allox::cmd
