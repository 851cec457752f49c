// SPDX-License-Identifier: Apache-2.0
#include "messages/results/checkpoints_json.hpp"

#include "messages/results/json_detail.hpp"

namespace allox {

namespace {

using results_detail::opt;
using results_detail::strings;

/// The catalog keeps the caller's metadata as its JSON text.
json::value metadata_of(const checkpoint_row& row) {
  if (!row.metadata)
    return nullptr;
  boost::system::error_code ec;
  auto parsed = json::parse(*row.metadata, ec);
  return ec ? json::value(nullptr) : parsed;
}

} // namespace

const char* to_string(path_change_kind k) {
  switch (k) {
  case path_change_kind::added:
    return "added";
  case path_change_kind::modified:
    return "modified";
  case path_change_kind::deleted:
    return "deleted";
  }
  return "modified";
}

json::object to_json(const checkpoint_record& r) {
  const auto& row = r.row;
  json::object o;
  o["checkpoint_id"] = row.checkpoint_id;
  o["created_at_ns"] = row.created_at_ns;
  o["origin"] = row.origin;
  o["message"] = opt(row.message);
  o["pinned"] = row.pinned;
  o["metadata"] = metadata_of(row);
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

json::object to_json(const checkpoint_created& c) {
  const auto& row = c.row;
  json::object o{{"agent_id", row.agent_id},
                 {"session_id", row.session_id},
                 {"checkpoint_id", row.checkpoint_id}};
  o["parent_id"] = opt(row.parent_id);
  o["metadata"] = metadata_of(row);
  return o;
}

json::object to_json(const checkpoint_deleted& d) {
  return {{"agent_id", d.agent_id},
          {"session_id", d.session_id},
          {"checkpoint_id", d.checkpoint_id},
          {"deleted", true}};
}

json::object to_json(const change_writer& w) {
  if (!w.action.empty())
    return {{"kind", "daemon"},
            {"action", w.action},
            {"origin", w.origin},
            {"ops", strings(w.ops)}};
  json::object o{{"kind", "run"},
                 {"run_id", w.run_id},
                 {"process_id", w.process_id},
                 {"pid", w.pid}};
  o["run_argv"] = w.run_argv ? json::value(strings(*w.run_argv)) : nullptr;
  o["exe"] = opt(w.exe);
  o["ops"] = strings(w.ops);
  return o;
}

json::object to_json(const history_page& p) {
  json::array history;
  for (const auto& e : p.entries) {
    json::object o{{"checkpoint_id", e.checkpoint_id}};
    o["parent_id"] = opt(e.parent_id);
    o["created_at_ns"] = e.created_at_ns;
    o["change"] = to_string(e.change.change);
    o["type"] = e.change.type;
    json::array writers;
    for (const auto& w : e.change.writers)
      writers.emplace_back(to_json(w));
    o["writers"] = std::move(writers);
    o["unattributed"] = opt(e.change.unattributed);
    history.emplace_back(std::move(o));
  }
  json::object o{{"agent_id", p.agent_id},
                 {"session_id", p.session_id},
                 {"path", p.path},
                 {"history", std::move(history)}};
  o["next_cursor"] = opt(p.next_cursor);
  o["has_more"] = p.has_more;
  return o;
}

json::object to_json(const diff_page& p) {
  json::object o{
      {"agent_id", p.agent_id}, {"session_id", p.session_id}, {"from", p.from}};
  o["to"] = opt(p.to);
  o["base_checkpoint"] = opt(p.base_checkpoint);
  json::array changes;
  changes.reserve(p.changes.size());
  for (const auto& c : p.changes) {
    json::object change{
        {"path", c.path}, {"change", to_string(c.change)}, {"type", c.type}};
    if (p.with_writers) {
      json::array writers;
      for (const auto& w : c.writers)
        writers.emplace_back(to_json(w));
      change["writers"] = std::move(writers);
      change["unattributed"] = opt(c.unattributed);
    }
    changes.emplace_back(std::move(change));
  }
  o["changes"] = std::move(changes);
  o["counts"] = json::object{{"added", p.counts.added},
                             {"modified", p.counts.modified},
                             {"deleted", p.counts.deleted}};
  o["next_cursor"] = opt(p.next_cursor);
  o["has_more"] = p.has_more;
  o["method"] = p.cost.method;
  o["stats"] = json::object{{"changed_inodes", p.cost.changed_inodes},
                            {"compared_paths", p.cost.compared_paths},
                            {"listed_dirs", p.cost.listed_dirs}};
  return o;
}

json::object to_json(const rollback_result& r) {
  json::object o{
      {"agent_id", r.agent_id},
      {"session_id", r.session_id},
      {"checkpoint_id", r.checkpoint_id},
      {"relative_workspace", r.relative_workspace},
      {"removed_runtime_entries", strings(r.removed_runtime_entries)}};
  if (r.terminated_process_runs)
    o["terminated_process_runs"] = strings(*r.terminated_process_runs);
  if (r.keep_asked)
    o["pre_rollback_checkpoint_id"] = opt(r.pre_rollback_checkpoint_id);
  if (r.pre_rollback_error)
    o["pre_rollback_error"] = *r.pre_rollback_error;
  return o;
}

} // namespace allox
