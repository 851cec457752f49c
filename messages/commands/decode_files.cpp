// SPDX-License-Identifier: Apache-2.0
// Decoders of the file.* commands (messages/commands/files.hpp).
#include "messages/commands/files.hpp"

#include <boost/beast/core/detail/base64.hpp>

namespace allox::cmd {

namespace {

/// The `encoding` parameter: utf-8 (default) or base64.
bool base64_encoding(params::reader& r) {
  auto enc = r.optional_string("encoding", "utf-8");
  r.check(enc == "utf-8" || enc == "base64",
          "encoding must be utf-8 or base64");
  return enc == "base64";
}

/// Strict base64 of `text` into `out`; false when it is not.
bool decode_base64(const json::string& text, std::string& out) {
  namespace base64 = boost::beast::detail::base64;
  out.resize(base64::decoded_size(text.size()));
  auto [written, read] = base64::decode(out.data(), text.data(), text.size());
  out.resize(written);
  // The decoder stops at the padding; anything else left is not base64.
  auto rest = text.subview(read);
  return rest.size() <= 2 &&
         rest.find_first_not_of('=') == json::string_view::npos &&
         text.size() % 4 == 0;
}

} // namespace

file_stat file_stat::decode(params::reader& r) {
  file_stat c;
  c.path = r.required_string("path");
  return c;
}

file_list file_list::decode(params::reader& r) {
  file_list c;
  c.path = r.optional_string("path");
  c.recursive = r.optional_bool("recursive", false);
  c.limit = r.optional_int("limit", 1000);
  c.cursor = r.optional_string("cursor");
  // After every type check, as the prototype.
  r.check(c.limit >= 1 && c.limit <= 10000, "limit must be 1..10000");
  return c;
}

file_read file_read::decode(params::reader& r) {
  file_read c;
  c.path = r.required_string("path");
  c.offset = r.optional_int("offset", 0);
  c.limit = r.optional_int("limit", max_file_chunk);
  c.base64 = base64_encoding(r);
  // After every type check, as the prototype.
  r.check(c.offset >= 0, "offset must be at least 0");
  r.check(c.limit >= 1 && c.limit <= max_file_chunk,
          "limit must be 1..1048576");
  return c;
}

file_write file_write::decode(params::reader& r) {
  file_write c;
  c.path = r.required_string("path");
  bool b64 = base64_encoding(r);
  c.mode = r.optional_int("mode", 0644);
  c.append = r.optional_bool("append", false);
  auto* data = r.params().if_contains("data");
  bool text = data != nullptr && data->is_string();
  r.check(text, "data must be a string");
  r.check(c.mode >= 0 && c.mode <= 0777,
          "mode must be 0..0777 (no setuid, setgid or sticky bits)");
  if (text && !b64)
    c.data.assign(data->get_string().data(), data->get_string().size());
  else if (text)
    r.check(decode_base64(data->get_string(), c.data),
            "data is not valid base64");
  c.origin = r.origin();
  return c;
}

file_mkdir file_mkdir::decode(params::reader& r) {
  file_mkdir c;
  c.path = r.required_string("path");
  c.parents = r.optional_bool("parents", false);
  c.origin = r.origin();
  return c;
}

file_remove file_remove::decode(params::reader& r) {
  file_remove c;
  c.path = r.required_string("path");
  c.recursive = r.optional_bool("recursive", false);
  c.origin = r.origin();
  return c;
}

file_move file_move::decode(params::reader& r) {
  file_move c;
  c.from = r.required_string("from");
  c.to = r.required_string("to");
  c.replace = r.optional_bool("replace", false);
  c.origin = r.origin();
  return c;
}

file_search file_search::decode(params::reader& r) {
  file_search c;
  c.pattern = r.optional_string("pattern");
  c.path = r.optional_string("path");
  c.glob = r.optional_string("glob");
  c.regex = r.optional_bool("regex", false);
  c.limit = r.optional_int("limit", 200);
  r.check(c.limit >= 1 && c.limit <= max_search_matches,
          "limit must be 1..10000");
  r.check(!c.pattern.empty() || !c.glob.empty(),
          "pattern or glob must be non-empty");
  return c;
}

file_replace file_replace::decode(params::reader& r) {
  file_replace c;
  c.path = r.required_string("path");
  c.old_string = r.required_string("old_string");
  // May be empty: an edit that deletes.
  auto* with = r.params().if_contains("new_string");
  r.check(with != nullptr && with->is_string(),
          "missing string parameter: new_string");
  if (with != nullptr && with->is_string())
    c.new_string.assign(with->get_string().data(), with->get_string().size());
  c.expected_count = r.optional_int("expected_count", 1);
  r.check(!c.old_string.empty(), "old_string must not be empty");
  r.check(c.old_string != c.new_string,
          "old_string and new_string are the same");
  r.check(c.expected_count >= 1, "expected_count must be at least 1");
  c.origin = r.origin();
  return c;
}

} // namespace allox::cmd
