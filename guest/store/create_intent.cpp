// SPDX-License-Identifier: Apache-2.0
#include "guest/store/create_intent.hpp"

#include "guest/os/fs.hpp"
#include "guest/os/unique_fd.hpp"
#include "messages/json.hpp"

#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace allox::store {

namespace {

constexpr const char* chunk_prefix = "trusted.allox.intent.";

std::string chunk_name(size_t k) {
  return chunk_prefix + std::to_string(k);
}

// The record's form is fixed (records written by earlier releases must
// stay readable): an absent message or metadata is null, an absent
// parent_id is "".
std::string encode(const checkpoint_row& row) {
  json::object o{{"checkpoint_id", row.checkpoint_id},
                 {"created_at_ns", row.created_at_ns},
                 {"origin", row.origin},
                 {"pinned", row.pinned},
                 {"parent_id", row.parent_id.value_or("")}};
  o["message"] = row.message ? json::value(*row.message) : nullptr;
  o["metadata"] = row.metadata ? json::value(*row.metadata) : nullptr;
  return json::serialize(o);
}

expected<checkpoint_row> decode(const std::string& text, const std::string& a,
                                const std::string& s) {
  auto bad = [&] {
    return make_error(errc::invalid_argument,
                      "unreadable checkpoint intent record in " + a + "/" + s);
  };
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object())
    return bad();
  const auto& o = v.get_object();
  auto str = [&](const char* key) -> const json::string* {
    auto* p = o.if_contains(key);
    return p != nullptr ? p->if_string() : nullptr;
  };
  auto* id = str("checkpoint_id");
  auto* origin = str("origin");
  auto* parent = str("parent_id");
  auto* created = o.if_contains("created_at_ns");
  auto* pinned = o.if_contains("pinned");
  auto* message = o.if_contains("message");
  auto* metadata = o.if_contains("metadata");
  if (id == nullptr || origin == nullptr || parent == nullptr ||
      created == nullptr || !created->is_int64() || pinned == nullptr ||
      !pinned->is_bool() || message == nullptr ||
      !(message->is_null() || message->is_string()) || metadata == nullptr ||
      !(metadata->is_null() || metadata->is_string()))
    return bad();
  checkpoint_row row;
  row.agent_id = a;
  row.session_id = s;
  row.checkpoint_id = std::string{*id};
  row.created_at_ns = created->get_int64();
  row.origin = std::string{*origin};
  row.pinned = pinned->get_bool();
  if (!parent->empty())
    row.parent_id = std::string{*parent};
  if (message->is_string())
    row.message = std::string{message->get_string()};
  if (metadata->is_string())
    row.metadata = std::string{metadata->get_string()};
  return row;
}

} // namespace

std::string intent_path(const layout& paths, const std::string& a,
                        const std::string& s, const std::string& id) {
  return paths.checkpoints_dir(a, s) + "/" + std::string{creating_prefix} + id;
}

caf::error write_create_intent(const layout& paths, const checkpoint_row& row) {
  auto path =
      intent_path(paths, row.agent_id, row.session_id, row.checkpoint_id);
  // A leftover of an earlier attempt may hold more chunks than this row.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return sys_error("unlink " + path);
  os::unique_fd fd{
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)};
  if (!fd)
    return sys_error("create " + path);
  auto text = encode(row);
  for (size_t k = 0; k * intent_chunk_bytes < text.size(); ++k) {
    auto chunk = std::string_view{text}.substr(k * intent_chunk_bytes,
                                               intent_chunk_bytes);
    if (::fsetxattr(fd.get(), chunk_name(k).c_str(), chunk.data(), chunk.size(),
                    0) != 0)
      return sys_error("setxattr " + path);
  }
  return caf::none;
}

expected<checkpoint_row> read_create_intent(const layout& paths,
                                            const std::string& a,
                                            const std::string& s,
                                            const std::string& id) {
  auto path = intent_path(paths, a, s, id);
  os::unique_fd fd{::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)};
  if (!fd) {
    if (errno == ENOENT)
      return make_error(errc::not_found, "no intent record: " + path);
    return sys_error("open " + path);
  }
  std::string text;
  std::string chunk(intent_chunk_bytes, '\0');
  for (size_t k = 0;; ++k) {
    auto n = ::fgetxattr(fd.get(), chunk_name(k).c_str(), chunk.data(),
                         chunk.size());
    if (n < 0) {
      if (errno == ENODATA)
        break;
      return sys_error("getxattr " + path);
    }
    text.append(chunk.data(), static_cast<size_t>(n));
  }
  auto row = decode(text, a, s);
  if (row && row->checkpoint_id != id)
    return make_error(errc::invalid_argument,
                      "intent record names another checkpoint: " + path);
  return row;
}

caf::error clear_create_intent(const layout& paths, const std::string& a,
                               const std::string& s, const std::string& id) {
  auto path = intent_path(paths, a, s, id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return sys_error("unlink " + path);
  return caf::none;
}

caf::error clear_create_intents(const layout& paths,
                                const std::vector<intent_ref>& refs) {
  caf::error first;
  for (const auto& r : refs)
    if (auto err = clear_create_intent(paths, r.agent_id, r.session_id,
                                       r.checkpoint_id);
        err && !first)
      first = std::move(err);
  return first;
}

std::vector<std::string> create_intents(const layout& paths,
                                        const std::string& a,
                                        const std::string& s) {
  auto names = os::list_dir(paths.checkpoints_dir(a, s));
  return names ? create_intents(*names) : std::vector<std::string>{};
}

std::vector<std::string> create_intents(const std::vector<std::string>& names) {
  std::vector<std::string> ids;
  for (const auto& n : names)
    if (n.compare(0, creating_prefix.size(), creating_prefix) == 0)
      ids.push_back(n.substr(creating_prefix.size()));
  return ids;
}

} // namespace allox::store
