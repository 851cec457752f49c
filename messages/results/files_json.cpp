// SPDX-License-Identifier: Apache-2.0
#include "messages/results/files_json.hpp"

namespace allox {

std::string_view to_string(file_kind k) {
  switch (k) {
  case file_kind::file:
    return "file";
  case file_kind::directory:
    return "directory";
  case file_kind::symlink:
    return "symlink";
  case file_kind::other:
    break;
  }
  return "other";
}

std::string_view to_string(change_kind k) {
  switch (k) {
  case change_kind::create:
    return "create";
  case change_kind::write:
    return "write";
  case change_kind::remove:
    return "remove";
  case change_kind::rename:
    return "rename";
  case change_kind::chmod:
    break;
  }
  return "chmod";
}

json::object to_json(const file_entry& e) {
  return json::object{{"path", e.path},
                      {"type", to_string(e.kind)},
                      {"size", e.size},
                      {"mode", e.mode},
                      {"mtime_ns", e.mtime_ns}};
}

json::object to_json(const dir_page& p) {
  json::array entries;
  entries.reserve(p.entries.size());
  for (const auto& e : p.entries)
    entries.emplace_back(to_json(e));
  json::value next = nullptr;
  if (p.next_cursor)
    next = *p.next_cursor;
  return json::object{{"path", p.path},
                      {"entries", std::move(entries)},
                      {"has_more", p.has_more},
                      {"next_cursor", std::move(next)}};
}

json::object to_json(const read_slice& r) {
  return json::object{{"path", r.path},
                      {"offset", r.offset},
                      {"size", r.size},
                      {"eof", r.eof},
                      {"encoding", r.base64 ? "base64" : "utf-8"},
                      {"data", r.data}};
}

json::object to_json(const write_result& r) {
  return json::object{{"path", r.path}, {"size", r.size}};
}

// The prototype's order: the outcome first, then the caller's path.
json::object to_json(const mkdir_result& r) {
  return json::object{{"created", true}, {"path", r.path}};
}

json::object to_json(const remove_result& r) {
  return json::object{{"removed", r.removed}, {"path", r.path}};
}

json::object to_json(const move_result& r) {
  return json::object{{"from", r.from}, {"to", r.to}};
}

json::object to_json(const search_result& r) {
  json::array matches;
  matches.reserve(r.matches.size());
  for (const auto& m : r.matches)
    matches.emplace_back(
        json::object{{"path", m.path}, {"line", m.line}, {"text", m.text}});
  json::array files;
  files.reserve(r.files.size());
  for (const auto& f : r.files)
    files.emplace_back(f);
  return json::object{{"path", r.path},
                      {"matches", std::move(matches)},
                      {"files", std::move(files)},
                      {"files_scanned", r.files_scanned},
                      {"truncated", r.truncated}};
}

json::object to_json(const transfer_begun& t) {
  return {{"root", t.root},     {"rel", t.rel},
          {"path", t.path},     {"epoch", t.epoch},
          {"shared", t.shared}, {"uploads_dir", t.uploads_dir}};
}

json::object to_json(const transfer_audited&) {
  return {{"audited", true}};
}

json::object to_json(const replace_result& r) {
  return json::object{
      {"path", r.path}, {"replacements", r.replacements}, {"size", r.size}};
}

} // namespace allox
