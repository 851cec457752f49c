// SPDX-License-Identifier: Apache-2.0
// Decoders of session.pause, session.resume and session.usage
// (messages/commands/pause.hpp).
#include "messages/commands/pause.hpp"

namespace allox::cmd {

session_pause session_pause::decode(params::reader& r) {
  session_pause c;
  c.keep_memory = r.optional_bool("keep_memory", true);
  c.message = r.optional_string("message");
  c.origin = r.origin();
  return c;
}

session_resume session_resume::decode(params::reader& r) {
  session_resume c;
  c.origin = r.origin();
  return c;
}

session_usage session_usage::decode(params::reader&) {
  return {};
}

} // namespace allox::cmd
