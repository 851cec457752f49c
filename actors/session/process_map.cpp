// SPDX-License-Identifier: Apache-2.0
#include "actors/session/process_map.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace allox::session_facets {

process_entry& apply_event(process_map& processes, run_row& row,
                           const process_record& e) {
  auto* p = processes.find(e.process_id);
  if (p == nullptr) {
    process_entry added;
    added.process_id = e.process_id;
    added.pid = e.pid;
    added.ppid = e.ppid;
    if (!e.parent_process_id.empty() &&
        processes.find(e.parent_process_id) != nullptr)
      added.parent_process_id = e.parent_process_id;
    added.comm = e.comm;
    added.root = e.root;
    added.started_ns = static_cast<int64_t>(e.time_ns);
    p = &processes.add(std::move(added));
    if (e.root)
      row.root_process_id = e.process_id;
  }
  switch (e.kind) {
  case process_event_kind::fork:
    break;
  case process_event_kind::exec:
    p->comm = e.comm;
    p->filenames.push_back(e.filename);
    break;
  case process_event_kind::exit:
    p->alive = false;
    p->exit_code = e.exit_code;
    p->signal = e.signal;
    p->exited_ns = static_cast<int64_t>(e.time_ns);
    break;
  }
  return *p;
}

namespace {

/// The nested tree below `p`.
process_node subtree(const process_map& processes,
                     const std::multimap<std::string, std::string>& children,
                     const process_entry& p) {
  process_node node;
  node.process_id = p.process_id;
  node.pid = p.pid;
  node.ppid = p.ppid;
  node.comm = p.comm;
  node.filenames = p.filenames;
  node.exit_code = p.exit_code;
  node.signal = p.signal;
  node.alive = p.alive;
  auto range = children.equal_range(p.process_id);
  for (auto it = range.first; it != range.second; ++it)
    node.children.push_back(
        subtree(processes, children, *processes.find(it->second)));
  return node;
}

} // namespace

std::vector<process_node> nest(const process_map& processes) {
  // Children in the order they started (ties by id).
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& p : processes.entries())
    order.emplace_back(p.started_ns, p.process_id);
  std::sort(order.begin(), order.end());
  std::multimap<std::string, std::string> children;
  std::vector<const process_entry*> top;
  for (const auto& [ns, id] : order) {
    const auto& p = *processes.find(id);
    if (p.parent_process_id && processes.find(*p.parent_process_id))
      children.emplace(*p.parent_process_id, id);
    else
      top.push_back(&p);
  }
  std::vector<process_node> roots;
  roots.reserve(top.size());
  for (const auto* p : top)
    roots.push_back(subtree(processes, children, *p));
  return roots;
}

bool all_exited(const process_map& processes) {
  if (processes.empty())
    return false;
  return std::none_of(processes.entries().begin(), processes.entries().end(),
                      [](const process_entry& p) {
                        // An unknown state is not an exit.
                        return p.alive != caf::optional<bool>{false};
                      });
}

} // namespace allox::session_facets
