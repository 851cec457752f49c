// SPDX-License-Identifier: Apache-2.0
#include "messages/results/checkpoints_json.hpp"

namespace allox {

namespace {

json::value opt(const caf::optional<std::string>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::array strings(const std::vector<std::string>& xs) {
  json::array out;
  out.reserve(xs.size());
  for (const auto& x : xs)
    out.emplace_back(x);
  return out;
}

} // namespace

json::object to_json(const checkpoint_record& r) {
  const auto& row = r.row;
  json::object o;
  o["checkpoint_id"] = row.checkpoint_id;
  o["created_at_ns"] = row.created_at_ns;
  o["origin"] = row.origin;
  o["message"] = opt(row.message);
  o["pinned"] = row.pinned;
  // The catalog keeps the caller's metadata as its JSON text.
  json::value meta = nullptr;
  if (row.metadata) {
    boost::system::error_code ec;
    auto parsed = json::parse(*row.metadata, ec);
    if (!ec)
      meta = std::move(parsed);
  }
  o["metadata"] = std::move(meta);
  o["missing"] = row.missing;
  o["parent_id"] = opt(row.parent_id);
  o["child_ids"] = strings(r.child_ids);
  return o;
}

json::object to_json(const checkpoint_view& v) {
  auto o = to_json(v.record);
  o["agent_id"] = v.record.row.agent_id;
  o["session_id"] = v.record.row.session_id;
  o["is_head"] = v.is_head;
  return o;
}

json::object to_json(const checkpoint_page& p) {
  json::object o;
  o["agent_id"] = p.agent_id;
  o["session_id"] = p.session_id;
  o["head"] = opt(p.head);
  if (p.checkpoint_ids)
    o["checkpoint_ids"] = strings(*p.checkpoint_ids);
  if (p.paged) {
    o["has_more"] = p.has_more;
    o["next_cursor"] =
        p.checkpoints.empty()
            ? json::value(nullptr)
            : json::value(p.checkpoints.back().row.checkpoint_id);
  }
  json::array records;
  records.reserve(p.checkpoints.size());
  for (const auto& r : p.checkpoints)
    records.emplace_back(to_json(r));
  o["checkpoints"] = std::move(records);
  return o;
}

} // namespace allox
