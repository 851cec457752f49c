#include "actors/session/process_map.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace allox::session_facets {

json::value opt(const caf::optional<int64_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

/// Applies one event to the run's process map.
void apply_event(json::object& processes, json::object& row,
                 const process_record& e) {
  auto* found = processes.if_contains(e.process_id);
  if (found == nullptr) {
    json::value parent = nullptr;
    if (!e.parent_process_id.empty() && processes.contains(e.parent_process_id))
      parent = e.parent_process_id;
    found =
        &processes
             .emplace(e.process_id, json::object{{"process_id", e.process_id},
                                                 {"pid", e.pid},
                                                 {"ppid", e.ppid},
                                                 {"parent_process_id", parent},
                                                 {"comm", e.comm},
                                                 {"filenames", json::array{}},
                                                 {"exit_code", nullptr},
                                                 {"signal", nullptr},
                                                 {"alive", true},
                                                 {"root", e.root},
                                                 {"started_ns", e.time_ns},
                                                 {"exited_ns", nullptr}})
             .first->value();
    if (e.root)
      row["root_process_id"] = e.process_id;
  }
  auto& p = found->as_object();
  if (e.event == "exec") {
    p["comm"] = e.comm;
    p["filenames"].as_array().emplace_back(e.filename);
  } else if (e.event == "exit") {
    p["alive"] = false;
    p["exit_code"] = opt(e.exit_code);
    p["signal"] = opt(e.signal);
    p["exited_ns"] = e.time_ns;
  }
}

/// The nested tree below `id`.
static json::object
subtree(const json::object& processes,
        const std::multimap<std::string, std::string>& children,
        const std::string& id) {
  const auto& p = processes.at(id).as_object();
  json::object node{{"process_id", id},
                    {"pid", p.at("pid")},
                    {"ppid", p.at("ppid")},
                    {"comm", p.at("comm")},
                    {"filenames", p.at("filenames")},
                    {"exit_code", p.at("exit_code")},
                    {"signal", p.at("signal")},
                    {"alive", p.at("alive")}};
  json::array kids;
  auto range = children.equal_range(id);
  for (auto it = range.first; it != range.second; ++it)
    kids.emplace_back(subtree(processes, children, it->second));
  node["children"] = std::move(kids);
  return node;
}

json::array nest(const json::object& processes) {
  // Children in the order they started.
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& kv : processes)
    order.emplace_back(
        kv.value().as_object().at("started_ns").to_number<int64_t>(),
        std::string{kv.key()});
  std::sort(order.begin(), order.end());
  std::multimap<std::string, std::string> children;
  std::vector<std::string> top;
  for (const auto& [ns, id] : order) {
    const auto& parent = processes.at(id).as_object().at("parent_process_id");
    if (parent.is_string() && processes.contains(parent.as_string()))
      children.emplace(std::string{parent.as_string()}, id);
    else
      top.push_back(id);
  }
  json::array roots;
  for (const auto& id : top)
    roots.emplace_back(subtree(processes, children, id));
  return roots;
}

/// Every process of the map exited.
bool all_exited(const json::object& row) {
  const auto* procs = row.if_contains("processes");
  if (procs == nullptr || !procs->is_object() || procs->as_object().empty())
    return false;
  for (const auto& kv : procs->as_object()) {
    const auto* alive = kv.value().as_object().if_contains("alive");
    if (alive == nullptr || !alive->is_bool() || alive->as_bool())
      return false;
  }
  return true;
}

} // namespace allox::session_facets
