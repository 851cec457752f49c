// SPDX-License-Identifier: Apache-2.0
// Table forms of RPC results: lists as columns, single objects as aligned
// fields. JSON and YAML output never come through here.
#include "cli/commands.hpp"

#include <ostream>
#include <set>

namespace allox::ctl {

namespace {

std::vector<const json::object*> objects(const json::value* v) {
  std::vector<const json::object*> rows;
  if (v != nullptr && v->is_array())
    for (const auto& e : v->get_array())
      if (e.is_object())
        rows.push_back(&e.get_object());
  return rows;
}

const json::value* field(const json::value& v, const char* key) {
  return v.is_object() ? v.get_object().if_contains(key) : nullptr;
}

/// A hint for the next page, when the result has one.
void more(const json::value& v, std::ostream& out, const style& st,
          const char* what) {
  auto* has = field(v, "has_more");
  auto* next = field(v, "next_cursor");
  if (has && *has == true && next)
    out << st.dim(std::string{"more "} + what + ": --cursor " + cell(*next))
        << "\n";
}

} // namespace

void view_generic(const json::value& v, std::ostream& out, const style& st) {
  if (v.is_object())
    return print_fields(out, st, v.get_object());
  if (v.is_array()) {
    auto rows = objects(&v);
    if (rows.empty() || rows.size() != v.get_array().size()) {
      for (const auto& e : v.get_array())
        out << cell(e) << "\n";
      return;
    }
    // Columns: every key with a scalar value, in order of appearance.
    std::vector<column> cols;
    std::set<std::string> seen;
    for (const auto* r : rows)
      for (const auto& kv : *r)
        if (!kv.value().is_object() &&
            seen.insert(std::string{kv.key()}).second) {
          std::string key{kv.key()};
          std::string head;
          for (char c : key)
            head += c == '_' ? ' ' : static_cast<char>(std::toupper(c));
          cols.push_back(col(head, key));
        }
    return print_table(out, st, cols, rows);
  }
  out << cell(v) << "\n";
}

void view_agent_list(const json::value& v, std::ostream& out, const style& st) {
  std::vector<json::object> rows;
  if (auto* ids = field(v, "agent_ids"); ids && ids->is_array())
    for (const auto& id : ids->get_array())
      rows.push_back(json::object{{"agent_id", id}});
  std::vector<const json::object*> ptrs;
  for (const auto& r : rows)
    ptrs.push_back(&r);
  print_table(out, st, {col("AGENT", "agent_id")}, ptrs);
}

void view_session_list(const json::value& v, std::ostream& out,
                       const style& st) {
  std::vector<json::object> rows;
  auto* agent = field(v, "agent_id");
  if (auto* ids = field(v, "session_ids"); ids && ids->is_array())
    for (const auto& id : ids->get_array())
      rows.push_back(json::object{{"agent_id", agent ? *agent : nullptr},
                                  {"session_id", id}});
  std::vector<const json::object*> ptrs;
  for (const auto& r : rows)
    ptrs.push_back(&r);
  print_table(out, st, {col("AGENT", "agent_id"), col("SESSION", "session_id")},
              ptrs);
}

void view_checkpoint_list(const json::value& v, std::ostream& out,
                          const style& st) {
  auto* head = field(v, "head");
  std::string head_id = head && head->is_string() ? cell(*head) : "";
  std::vector<column> cols{
      {"HEAD",
       [head_id](const json::object& o) {
         return cell(o.at("checkpoint_id")) == head_id ? "*" : "";
       }},
      col("CHECKPOINT", "checkpoint_id"),
      col("PARENT", "parent_id"),
      time_col("CREATED", "created_at_ns"),
      {"PINNED",
       [](const json::object& o) {
         auto* p = o.if_contains("pinned");
         return p && *p == true ? "yes" : "";
       }},
      {"MESSAGE", [](const json::object& o) {
         auto* m = o.if_contains("message");
         auto* missing = o.if_contains("missing");
         std::string text = m && m->is_string() ? cell(*m) : "";
         if (missing && *missing == true)
           text = "(missing) " + text;
         return text;
       }}};
  print_table(out, st, cols, objects(field(v, "checkpoints")));
  more(v, out, st, "checkpoints");
}

/// A change's writers ("run/pid exe ops; ..."), or why none is named.
static std::string writers_text(const json::object& o) {
  const auto* w = o.if_contains("writers");
  if (w == nullptr || !w->is_array())
    return {};
  std::string text;
  for (const auto& x : w->get_array()) {
    if (!x.is_object())
      continue;
    const auto& wo = x.get_object();
    auto get = [&wo](const char* k) {
      auto* f = wo.if_contains(k);
      return f ? cell(*f) : std::string{};
    };
    std::string ops;
    if (auto* list = wo.if_contains("ops"); list && list->is_array())
      for (const auto& op : list->get_array())
        ops += (ops.empty() ? "" : ",") + cell(op);
    auto exe = get("exe");
    auto who = wo.contains("action")
                   ? get("origin") + ":" + get("action")
                   : get("run_id") + "/" + get("pid") +
                         (exe.empty() || exe == "-" ? "" : " " + exe);
    text += (text.empty() ? "" : "; ") + who + " " + ops;
  }
  if (text.empty())
    if (auto* u = o.if_contains("unattributed"); u && u->is_string())
      text = "(" + cell(*u) + ")";
  return text;
}

void view_history(const json::value& v, std::ostream& out, const style& st) {
  std::vector<column> cols{col("CHECKPOINT", "checkpoint_id"),
                           col("CHANGE", "change"),
                           col("TYPE", "type"),
                           {"WRITERS", writers_text}};
  print_table(out, st, cols, objects(field(v, "history")));
  more(v, out, st, "history");
}

void view_diff(const json::value& v, std::ostream& out, const style& st) {
  std::vector<column> cols{col("CHANGE", "change"), col("TYPE", "type"),
                           col("PATH", "path")};
  auto changes = objects(field(v, "changes"));
  if (!changes.empty() && changes.front()->contains("writers"))
    cols.push_back({"WRITERS", writers_text});
  print_table(out, st, cols, changes);
  if (auto* counts = field(v, "counts"); counts && counts->is_object()) {
    const auto& c = counts->get_object();
    auto n = [&](const char* k) {
      auto* x = c.if_contains(k);
      return x ? cell(*x) : std::string{"0"};
    };
    auto* method = field(v, "method");
    out << st.dim(n("added") + " added, " + n("modified") + " modified, " +
                  n("deleted") + " deleted" +
                  (method ? " (" + cell(*method) + ")" : ""))
        << "\n";
  }
  more(v, out, st, "changes");
}

void view_audit(const json::value& v, std::ostream& out, const style& st) {
  static const std::set<std::string> shown{"cursor", "timestamp_ns", "op",
                                           "agent_id", "session_id"};
  std::vector<column> cols{col("CURSOR", "cursor"),
                           time_col("TIME", "timestamp_ns"),
                           col("OP", "op"),
                           col("AGENT", "agent_id"),
                           col("SESSION", "session_id"),
                           {"DETAILS", [](const json::object& o) {
                              std::string text;
                              for (const auto& kv : o)
                                if (shown.count(std::string{kv.key()}) == 0)
                                  text += (text.empty() ? "" : " ") +
                                          std::string{kv.key()} + "=" +
                                          cell(kv.value());
                              return text;
                            }}};
  print_table(out, st, cols, objects(field(v, "events")));
  more(v, out, st, "events");
}

void view_runs(const json::value& v, std::ostream& out, const style& st) {
  if (v.is_object()) // process.get: one row
    return print_fields(out, st, v.get_object());
  print_table(out, st,
              {col("RUN", "run_id"), col("STATE", "state"),
               col("EXIT", "root_exit_code"), col("REASON", "stop_reason"),
               time_col("CREATED", "created_ns"),
               time_col("FINISHED", "finished_ns")},
              objects(&v));
}

void view_events(const json::value& v, std::ostream& out, const style& st) {
  auto* events = field(v, "events");
  if (events == nullptr || !events->is_array() || events->get_array().empty())
    out << st.dim("no events") << "\n";
  else
    view_generic(*events, out, st);
  if (auto* state = field(v, "state"))
    out << st.dim("run state: " + cell(*state)) << "\n";
}

} // namespace allox::ctl
