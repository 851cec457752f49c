// SPDX-License-Identifier: Apache-2.0
// Decoders of the share.* commands (messages/commands/share.hpp). What
// list, read and write name inside the target (the path, the data) is
// only type-checked here: the target checks it, so that every attempt on
// it is in its audit trail, refused ones too.
#include "messages/commands/decode.hpp"
#include "messages/commands/decode_detail.hpp"
#include "messages/params.hpp"
#include "messages/share.hpp"

namespace allox::cmd {

// -- share --------------------------------------------------------------------

namespace {

/// target_agent_id and target_session_id, with the id rule.
expected<session_ref> target_of(const json::object& p) {
  auto aid = params::required_id(p, "target_agent_id", "agent");
  if (!aid)
    return aid.error();
  auto sid = params::required_id(p, "target_session_id", "session");
  if (!sid)
    return sid.error();
  return session_ref{std::move(*aid), std::move(*sid)};
}

/// The `path` parameter as sent; `fallback` when absent or null.
expected<std::string> path_of(const json::object& p, const char* fallback) {
  auto* v = p.if_contains("path");
  if (v == nullptr || v->is_null())
    return std::string{fallback};
  if (!v->is_string())
    return invalid("path must be a relative POSIX path");
  return std::string{v->get_string()};
}

} // namespace

expected<share_status> decode_share_status(const json::object&) {
  return share_status{};
}

expected<share_enable> decode_share_enable(const json::object& p) {
  auto scope = params::optional_string(p, "scope", ".");
  if (!scope)
    return scope.error();
  if (auto parts = split_share_path(*scope); !parts)
    return parts.error();
  auto permission = params::optional_string(p, "permission", "read");
  if (!permission)
    return permission.error();
  if (*permission != "read" && *permission != "write")
    return invalid("permission must be read or write");
  share_enable c;
  c.scope = std::move(*scope);
  c.permission = std::move(*permission);
  c.origin = params::origin(p);
  return c;
}

expected<share_disable> decode_share_disable(const json::object& p) {
  share_disable c;
  c.origin = params::origin(p);
  return c;
}

expected<share_list> decode_share_list(const json::object& p) {
  auto target = target_of(p);
  if (!target)
    return target.error();
  auto path = path_of(p, ".");
  if (!path)
    return path.error();
  share_list c;
  c.target = std::move(*target);
  c.path = std::move(*path);
  return c;
}

expected<share_read> decode_share_read(const json::object& p) {
  auto target = target_of(p);
  if (!target)
    return target.error();
  auto path = path_of(p, "");
  if (!path)
    return path.error();
  share_read c;
  c.target = std::move(*target);
  c.path = std::move(*path);
  return c;
}

expected<share_write> decode_share_write(const json::object& p) {
  auto target = target_of(p);
  if (!target)
    return target.error();
  auto path = path_of(p, "");
  if (!path)
    return path.error();
  auto* data = p.if_contains("data_base64");
  if (data == nullptr || !data->is_string())
    return invalid("write requires base64 data up to 256 KiB");
  share_write c;
  c.target = std::move(*target);
  c.path = std::move(*path);
  c.data_base64 = std::string{data->get_string()};
  return c;
}

} // namespace allox::cmd
