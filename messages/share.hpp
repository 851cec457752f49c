// SPDX-License-Identifier: Apache-2.0
// Session-to-session sharing (share.*, reference 10.2): a session's share
// policy as the catalog keeps it, the rules a shared path must follow, the
// limits, and strict base64. Pure functions; the filesystem side is
// guest/os/share_files.hpp, the actors' side actors/session/share.cpp.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/optional.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace allox {

/// The most bytes one share.read returns and one share.write takes.
inline constexpr size_t share_max_file = 256 * 1024;

/// The most base64 characters share.write takes (the prototype's bound:
/// 256 KiB encoded, plus padding slack).
inline constexpr size_t share_max_base64 = 349528;

/// The most entries one share.list returns; a larger directory is refused.
inline constexpr size_t share_max_entries = 1000;

/// A session's share policy. Both sessions must have `enabled` for any
/// access between them; `scope` (a share path, "." for all of current/)
/// is what others reach, `permission` whether they may write there.
struct share_policy {
  bool enabled = false;
  std::string scope = ".";
  /// "read" or "write".
  std::string permission = "read";
};

/// The policy kept as catalog text; none or unreadable text is the
/// default (disabled, ".", "read").
share_policy parse_share_policy(const caf::optional<std::string>& text);

/// The catalog text of a policy: {"enabled", "scope", "permission"}.
std::string serialize_share_policy(const share_policy& p);

/// share.status, enable and disable: a session's policy in force.
struct share_view {
  std::string agent_id;
  std::string session_id;
  share_policy policy;
};

/// The native wire's share.status: the ids, then the policy's fields.
json::object to_json(const share_view& v);

/// What a caller asks of a target's shared files.
enum class share_op : uint8_t { list, read, write };

/// "list", "read" or "write": the audit record's `share.<op>`.
const char* name_of(share_op op);

/// One entry of a shared directory.
struct share_entry {
  enum class kind : uint8_t { directory, file, unsupported };
  std::string name;
  kind type = kind::unsupported;
  /// A regular file's size; 0 for anything else.
  int64_t size = 0;
};

/// share.list: a directory's entries, sorted by name.
struct share_listing {
  std::vector<share_entry> entries;
};

/// share.read: the file's bytes (base64 only on the wire).
struct share_content {
  std::string data;
};

/// share.write: how many bytes replaced the file.
struct share_written {
  int64_t written = 0;
};

/// The target's answer to one access: the result of its op.
using share_answer = std::variant<share_listing, share_content, share_written>;

/// The native wire's share.list {entries: [{name, type, size}]}, share.read
/// {data_base64, size} and share.write {written}.
json::object to_json(const share_listing& r);
json::object to_json(const share_content& r);
json::object to_json(const share_written& r);

/// Splits a share path into its components (reference 10.2): a relative
/// POSIX path, non-empty, without NUL or backslash, at most 4096 bytes; "."
/// alone names the scope itself (no components); otherwise no empty, "."
/// or ".." component (so no absolute path and no "a//b"). Errors:
/// `path must be a relative POSIX path`, `absolute paths and dot
/// components are not allowed`.
expected<std::vector<std::string>> split_share_path(std::string_view path);

/// Decodes strict base64 (RFC 4648 alphabet, length a multiple of 4, at
/// most two '=' and only at the end) into `out`; false when it is not.
bool decode_base64_strict(std::string_view text, std::string& out);

/// share.write's data: at most share_max_base64 characters of strict
/// base64 decoding to at most share_max_file bytes. Errors: `write
/// requires base64 data up to 256 KiB`, `invalid base64 data`.
expected<std::string> decode_share_data(std::string_view base64);

/// Base64 of `data`.
std::string encode_base64(std::string_view data);

} // namespace allox

// Local messages only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::share_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::share_listing)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::share_content)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::share_written)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(allox::share_answer)
