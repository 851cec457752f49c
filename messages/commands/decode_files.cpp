// SPDX-License-Identifier: Apache-2.0
// Decoders of the file.* commands (messages/commands/files.hpp).
#include "messages/commands/decode.hpp"
#include "messages/commands/decode_detail.hpp"
#include "messages/params.hpp"

#include <boost/beast/core/detail/base64.hpp>

namespace allox::cmd {

// -- files ----------------------------------------------------------------------

namespace {

/// The `encoding` parameter: utf-8 (default) or base64.
expected<bool> base64_encoding(const json::object& p) {
  auto enc = params::optional_string(p, "encoding", "utf-8");
  if (!enc)
    return enc.error();
  if (*enc != "utf-8" && *enc != "base64")
    return invalid("encoding must be utf-8 or base64");
  return *enc == "base64";
}

} // namespace

expected<file_stat> decode_file_stat(const json::object& p) {
  auto path = params::required_string(p, "path");
  if (!path)
    return path.error();
  file_stat c;
  c.path = std::move(*path);
  return c;
}

expected<file_list> decode_file_list(const json::object& p) {
  auto path = params::optional_string(p, "path");
  auto recursive = params::optional_bool(p, "recursive", false);
  auto limit = params::optional_int(p, "limit", 1000);
  auto cursor = params::optional_string(p, "cursor");
  if (!path)
    return path.error();
  if (!recursive)
    return recursive.error();
  if (!limit)
    return limit.error();
  if (!cursor)
    return cursor.error();
  if (*limit < 1 || *limit > 10000)
    return invalid("limit must be 1..10000");
  file_list c;
  c.path = std::move(*path);
  c.recursive = *recursive;
  c.limit = *limit;
  c.cursor = std::move(*cursor);
  return c;
}

expected<file_read> decode_file_read(const json::object& p) {
  auto path = params::required_string(p, "path");
  auto offset = params::optional_int(p, "offset", 0);
  auto limit = params::optional_int(p, "limit", max_file_chunk);
  auto b64 = base64_encoding(p);
  if (!path)
    return path.error();
  if (!offset)
    return offset.error();
  if (!limit)
    return limit.error();
  if (!b64)
    return b64.error();
  if (*offset < 0)
    return invalid("offset must be at least 0");
  if (*limit < 1 || *limit > max_file_chunk)
    return invalid("limit must be 1..1048576");
  file_read c;
  c.path = std::move(*path);
  c.offset = *offset;
  c.limit = *limit;
  c.base64 = *b64;
  return c;
}

expected<file_write> decode_file_write(const json::object& p) {
  auto path = params::required_string(p, "path");
  auto b64 = base64_encoding(p);
  auto mode = params::optional_int(p, "mode", 0644);
  auto append = params::optional_bool(p, "append", false);
  if (!path)
    return path.error();
  if (!b64)
    return b64.error();
  if (!mode)
    return mode.error();
  if (!append)
    return append.error();
  auto* data = p.if_contains("data");
  if (data == nullptr || !data->is_string())
    return invalid("data must be a string");
  if (*mode < 0 || *mode > 0777)
    return invalid("mode must be 0..0777 (no setuid, setgid or sticky bits)");
  file_write c;
  c.path = std::move(*path);
  auto text = data->get_string();
  if (*b64) {
    namespace base64 = boost::beast::detail::base64;
    c.data.resize(base64::decoded_size(text.size()));
    auto [written, read] = base64::decode(c.data.data(), text.data(),
                                          text.size());
    // The decoder stops at the padding; anything else left is not base64.
    auto rest = text.subview(read);
    if (rest.size() > 2 || rest.find_first_not_of('=') != json::string_view::npos ||
        (text.size() % 4) != 0)
      return invalid("data is not valid base64");
    c.data.resize(written);
  } else {
    c.data.assign(text.data(), text.size());
  }
  c.mode = *mode;
  c.append = *append;
  c.origin = params::origin(p);
  return c;
}

expected<file_mkdir> decode_file_mkdir(const json::object& p) {
  auto path = params::required_string(p, "path");
  auto parents = params::optional_bool(p, "parents", false);
  if (!path)
    return path.error();
  if (!parents)
    return parents.error();
  file_mkdir c;
  c.path = std::move(*path);
  c.parents = *parents;
  c.origin = params::origin(p);
  return c;
}

expected<file_remove> decode_file_remove(const json::object& p) {
  auto path = params::required_string(p, "path");
  auto recursive = params::optional_bool(p, "recursive", false);
  if (!path)
    return path.error();
  if (!recursive)
    return recursive.error();
  file_remove c;
  c.path = std::move(*path);
  c.recursive = *recursive;
  c.origin = params::origin(p);
  return c;
}

expected<file_move> decode_file_move(const json::object& p) {
  auto from = params::required_string(p, "from");
  auto to = params::required_string(p, "to");
  if (!from)
    return from.error();
  if (!to)
    return to.error();
  file_move c;
  c.from = std::move(*from);
  c.to = std::move(*to);
  c.origin = params::origin(p);
  return c;
}

} // namespace allox::cmd
