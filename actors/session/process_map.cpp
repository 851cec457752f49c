// SPDX-License-Identifier: Apache-2.0
#include "actors/session/process_map.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace allox::session_facets {

json::value opt(const caf::optional<int64_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

/// Applies one event to the run's process map.
json::object& apply_event(json::object& processes, run_row& row,
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
      row.root_process_id = e.process_id;
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
  return p;
}

void append_json_string(std::string& out, std::string_view s) {
  bool plain = std::none_of(s.begin(), s.end(), [](char c) {
    return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
  });
  if (plain) {
    out += '"';
    out += s;
    out += '"';
    return;
  }
  json::serializer sr;
  sr.reset(json::string_view{s.data(), s.size()});
  char buf[256];
  while (!sr.done())
    out += sr.read(buf);
}

namespace {

template <class Int>
void append_number(std::string& out, Int v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

void append_field(std::string& out, std::string_view name, uint64_t v) {
  out += name;
  append_number(out, v);
}

void append_optional(std::string& out, std::string_view name,
                     const caf::optional<int64_t>& v) {
  out += name;
  if (v)
    append_number(out, *v);
  else
    out += "null";
}

} // namespace

std::string event_line_ids(std::string_view run_id, std::string_view session_id,
                           std::string_view agent_id) {
  std::string out = ",\"run_id\":";
  append_json_string(out, run_id);
  out += ",\"session_id\":";
  append_json_string(out, session_id);
  out += ",\"agent_id\":";
  append_json_string(out, agent_id);
  return out;
}

void append_event_line(std::string& out, uint64_t seq, const process_record& e,
                       int64_t ppid, std::string_view ids) {
  append_field(out, "{\"seq\":", seq);
  out += ",\"event\":";
  append_json_string(out, e.event);
  append_field(out, ",\"pid\":", e.pid);
  append_field(out, ",\"tid\":", e.tid);
  out += ",\"comm\":";
  append_json_string(out, e.comm);
  append_field(out, ",\"ns\":", e.time_ns);
  out += ",\"process_id\":";
  append_json_string(out, e.process_id);
  append_field(out, ",\"kernel_seq\":", e.kernel_seq);
  out += ids;
  out += ",\"ppid\":";
  append_number(out, ppid);
  if (e.root)
    out += ",\"root\":true";
  if (e.event == "fork") {
    out += ",\"parent_process_id\":";
    append_json_string(out, e.parent_process_id);
  } else if (e.event == "exec") {
    out += ",\"filename\":";
    append_json_string(out, e.filename);
  } else if (e.event == "exit") {
    append_optional(out, ",\"exit_code\":", e.exit_code);
    append_optional(out, ",\"signal\":", e.signal);
  }
  out += "}\n";
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
bool all_exited(const json::object& processes) {
  if (processes.empty())
    return false;
  for (const auto& kv : processes) {
    const auto* alive = kv.value().as_object().if_contains("alive");
    if (alive == nullptr || !alive->is_bool() || alive->as_bool())
      return false;
  }
  return true;
}

} // namespace allox::session_facets
