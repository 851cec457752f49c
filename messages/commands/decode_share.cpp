// SPDX-License-Identifier: Apache-2.0
// Decoders of the share.* commands (messages/commands/share.hpp). What
// list, read and write name inside the target (the path, the data) is
// only type-checked here: the target checks it, so that every attempt on
// it is in its audit trail, refused ones too.
#include "messages/commands/share.hpp"
#include "messages/share.hpp"

namespace allox::cmd {

namespace {

/// target_agent_id and target_session_id, with the id rule.
session_ref target_of(params::reader& r) {
  session_ref target;
  target.agent_id = r.required_id("target_agent_id", "agent");
  target.session_id = r.required_id("target_session_id", "session");
  return target;
}

/// The `path` parameter as sent; `fallback` when absent or null.
std::string path_of(params::reader& r, const char* fallback) {
  auto* v = r.params().if_contains("path");
  if (v == nullptr || v->is_null())
    return fallback;
  r.check(v->is_string(), "path must be a relative POSIX path");
  return v->is_string() ? std::string{v->get_string()} : std::string{};
}

} // namespace

share_status share_status::decode(params::reader&) {
  return {};
}

share_enable share_enable::decode(params::reader& r) {
  share_enable c;
  c.scope = r.optional_string("scope", ".");
  if (auto parts = split_share_path(c.scope); !parts)
    r.fail(std::move(parts.error()));
  c.permission = r.optional_string("permission", "read");
  r.check(c.permission == "read" || c.permission == "write",
          "permission must be read or write");
  c.origin = r.origin();
  return c;
}

share_disable share_disable::decode(params::reader& r) {
  share_disable c;
  c.origin = r.origin();
  return c;
}

share_list share_list::decode(params::reader& r) {
  share_list c;
  c.target = target_of(r);
  c.path = path_of(r, ".");
  return c;
}

share_read share_read::decode(params::reader& r) {
  share_read c;
  c.target = target_of(r);
  c.path = path_of(r, "");
  return c;
}

share_write share_write::decode(params::reader& r) {
  share_write c;
  c.target = target_of(r);
  c.path = path_of(r, "");
  auto* data = r.params().if_contains("data_base64");
  bool text = data != nullptr && data->is_string();
  r.check(text, "write requires base64 data up to 256 KiB");
  if (text)
    c.data_base64 = std::string{data->get_string()};
  return c;
}

} // namespace allox::cmd
