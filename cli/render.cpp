// SPDX-License-Identifier: Apache-2.0
// Pictures for people: the actor tree of system.dump and the checkpoint
// DAG of checkpoint.list.
#include "cli/commands.hpp"

#include <algorithm>
#include <map>
#include <ostream>

namespace allox::ctl {

namespace {

std::string state_text(const style& st, const std::string& state) {
  if (state == "idle" || state == "running")
    return st.green(state);
  if (state == "failed" || state == "unresponsive" || state == "fenced")
    return st.red(state);
  return st.yellow(state);
}

std::string text_of(const json::object& o, const char* key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string{v->get_string()} : "";
}

/// "agent a", "session a/s", "metadata": the node's kind and ids.
std::string node_title(const style& st, const json::object& n) {
  auto kind = text_of(n, "kind");
  auto agent = text_of(n, "agent_id");
  auto session = text_of(n, "session_id");
  std::string id = agent.empty()     ? ""
                   : session.empty() ? agent
                                     : agent + "/" + session;
  return st.bold(kind.empty() ? "?" : kind) + (id.empty() ? "" : " ") +
         st.cyan(id);
}

void dump_node(const json::object& n, const std::string& lead, bool root,
               bool last, std::ostream& out, const style& st) {
  std::string line = root ? "" : lead + (last ? "└── " : "├── ");
  line += node_title(st, n);
  if (auto state = text_of(n, "state"); !state.empty())
    line += "  " + state_text(st, state);
  if (auto* mb = n.if_contains("mailbox"))
    line += "  mailbox=" + cell(*mb);
  if (auto* c = n.if_contains("counters"); c && c->is_object())
    for (const auto& kv : c->get_object())
      line += "  " + std::string{kv.key()} + "=" + cell(kv.value());
  if (auto err = text_of(n, "error"); !err.empty())
    line += "  " + st.red(err);
  out << line << "\n";
  auto* children = n.if_contains("children");
  if (children == nullptr || !children->is_array())
    return;
  const auto& kids = children->get_array();
  std::string next = root ? "" : lead + (last ? "    " : "│   ");
  for (size_t i = 0; i < kids.size(); ++i)
    if (kids[i].is_object())
      dump_node(kids[i].get_object(), next, false, i + 1 == kids.size(), out,
                st);
}

} // namespace

void view_dump(const json::value& v, std::ostream& out, const style& st) {
  if (!v.is_object())
    return view_generic(v, out, st);
  const auto& o = v.get_object();
  if (auto* d = o.if_contains("daemon"); d && d->is_object()) {
    std::string line = st.bold("daemon");
    for (const auto& kv : d->get_object())
      line += "  " + std::string{kv.key()} + "=" + cell(kv.value());
    out << line << "\n";
  }
  if (auto* t = o.if_contains("tree"); t && t->is_object())
    dump_node(t->get_object(), "", true, true, out, st);
}

namespace {

struct graph_node {
  std::string id;
  std::string parent;
  int64_t created = 0;
  const json::object* record = nullptr; // null for the live workspace
};

/// The lanes as text: `mark` in lane `at`, '|' in the other live lanes.
std::string lanes_text(const std::vector<std::string>& lanes, size_t at,
                       const std::string& mark) {
  std::string s;
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (i > 0)
      s += ' ';
    s += i == at ? mark : lanes[i].empty() ? " " : "|";
  }
  return s;
}

void trim(std::vector<std::string>& lanes) {
  while (!lanes.empty() && lanes.back().empty())
    lanes.pop_back();
}

} // namespace

void view_checkpoint_graph(const json::value& v, std::ostream& out,
                           const style& st) {
  auto* records =
      v.is_object() ? v.get_object().if_contains("checkpoints") : nullptr;
  auto* head = v.is_object() ? v.get_object().if_contains("head") : nullptr;
  std::string head_id = head && head->is_string() ? cell(*head) : "";
  std::vector<graph_node> nodes;
  std::map<std::string, bool> known;
  if (records && records->is_array())
    for (const auto& r : records->get_array()) {
      if (!r.is_object())
        continue;
      const auto& o = r.get_object();
      graph_node n;
      n.id = text_of(o, "checkpoint_id");
      n.parent = text_of(o, "parent_id");
      if (auto* c = o.if_contains("created_at_ns"); c && c->is_number())
        n.created = c->to_number<int64_t>();
      n.record = &o;
      known[n.id] = true;
      nodes.push_back(n);
    }
  if (nodes.empty()) {
    out << st.dim("no checkpoints") << "\n";
    return;
  }
  // Children before parents: newest first (a child is always younger than
  // its parent), with the live workspace above the head.
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) {
    return a.created != b.created ? a.created > b.created : a.id > b.id;
  });
  if (!head_id.empty())
    nodes.insert(nodes.begin(), graph_node{"", head_id, 0, nullptr});
  std::vector<std::string> lanes;
  for (const auto& n : nodes) {
    auto key = n.record ? n.id : std::string{"\x01workspace"};
    auto it = std::find(lanes.begin(), lanes.end(), key);
    size_t at = static_cast<size_t>(it - lanes.begin());
    if (it == lanes.end()) {
      // A branch tip: a free lane, else a new one.
      auto free = std::find(lanes.begin(), lanes.end(), std::string{});
      at = static_cast<size_t>(free - lanes.begin());
      if (free == lanes.end())
        lanes.push_back(key);
      else
        *free = key;
    }
    std::string text;
    if (n.record == nullptr) {
      text =
          lanes_text(lanes, at, st.green("@")) + "  " + st.dim("(workspace)");
    } else {
      const auto& o = *n.record;
      bool is_head = n.id == head_id;
      std::vector<std::string> labels;
      if (is_head)
        labels.push_back(st.green("HEAD"));
      if (auto* p = o.if_contains("pinned"); p && *p == true)
        labels.push_back(st.yellow("pinned"));
      if (auto* m = o.if_contains("missing"); m && *m == true)
        labels.push_back(st.red("missing"));
      std::string label_text;
      for (const auto& l : labels)
        label_text += (label_text.empty() ? " (" : ", ") + l;
      if (!label_text.empty())
        label_text += ")";
      auto message = text_of(o, "message");
      text = lanes_text(lanes, at, is_head ? st.green("*") : "*") + "  " +
             st.cyan(n.id) + label_text + "  " +
             st.dim(time_text(json::value(n.created))) +
             (message.empty() ? "" : "  " + message);
    }
    out << text << "\n";
    // The lane continues with the parent, or ends where the parent's lane
    // already runs (a branch point), or ends at a root.
    bool has_parent = !n.parent.empty() && known.count(n.parent) > 0;
    auto other = std::find(lanes.begin(), lanes.end(), n.parent);
    if (has_parent && other != lanes.end() &&
        static_cast<size_t>(other - lanes.begin()) != at) {
      auto into = static_cast<size_t>(other - lanes.begin());
      lanes[at] = "";
      std::string join(lanes.size() * 2, ' ');
      for (size_t i = 0; i < lanes.size(); ++i)
        if (!lanes[i].empty())
          join[2 * i] = '|';
      if (into < at)
        join[2 * at - 1] = '/';
      else
        join[2 * at + 1] = '\\';
      while (!join.empty() && join.back() == ' ')
        join.pop_back();
      out << join << "\n";
    } else {
      lanes[at] = has_parent ? n.parent : "";
    }
    trim(lanes);
  }
}

} // namespace allox::ctl
