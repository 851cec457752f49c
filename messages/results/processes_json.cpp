// SPDX-License-Identifier: Apache-2.0
#include "messages/results/processes_json.hpp"

#include "messages/results/json_detail.hpp"
#include "messages/results/runs.hpp"

#include <algorithm>
#include <charconv>
#include <utility>

namespace allox {

using results_detail::opt;
using results_detail::strings;

// -- the process map ----------------------------------------------------------

process_entry* process_map::find(const std::string& process_id) {
  auto it = index_.find(process_id);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const process_entry* process_map::find(const std::string& process_id) const {
  auto it = index_.find(process_id);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

process_entry& process_map::add(process_entry e) {
  index_.emplace(e.process_id, entries_.size());
  entries_.push_back(std::move(e));
  return entries_.back();
}

json::object to_json(const process_map& m) {
  json::object out;
  out.reserve(m.size());
  for (const auto& p : m.entries()) {
    json::object e{{"process_id", p.process_id},
                   {"pid", p.pid},
                   {"ppid", p.ppid},
                   {"parent_process_id", opt(p.parent_process_id)},
                   {"comm", p.comm},
                   {"filenames", strings(p.filenames)},
                   {"exit_code", opt(p.exit_code)},
                   {"signal", opt(p.signal)},
                   {"alive", opt(p.alive)},
                   {"root", p.root},
                   {"started_ns", p.started_ns},
                   {"exited_ns", opt(p.exited_ns)}};
    for (const auto& kv : p.extra)
      e.emplace(kv.key(), kv.value());
    out[p.process_id] = std::move(e);
  }
  return out;
}

namespace {

/// Reads the members of a map entry or a log line by key; the first key of
/// the wrong type is kept (later reads are then skipped).
class field_reader {
public:
  explicit field_reader(const json::object& o) : o_(o) {}

  void text(const char* key, std::string& out) {
    if (const auto* v = found(key)) {
      if (v->is_string())
        out = std::string{v->get_string()};
      else
        bad(key);
    }
  }
  void text(const char* key, caf::optional<std::string>& out) {
    if (const auto* v = found(key); v != nullptr && !v->is_null()) {
      std::string s;
      text(key, s);
      out = std::move(s);
    }
  }
  template <class Int>
  void number(const char* key, Int& out) {
    if (const auto* v = found(key)) {
      if (v->is_int64())
        out = static_cast<Int>(v->get_int64());
      else if (v->is_uint64())
        out = static_cast<Int>(v->get_uint64());
      else
        bad(key);
    }
  }
  void number(const char* key, caf::optional<int64_t>& out) {
    if (const auto* v = found(key); v != nullptr && !v->is_null()) {
      int64_t n = 0;
      number(key, n);
      out = n;
    }
  }
  void flag(const char* key, bool& out) {
    if (const auto* v = found(key)) {
      if (v->is_bool())
        out = v->get_bool();
      else
        bad(key);
    }
  }
  void flag(const char* key, caf::optional<bool>& out) {
    if (const auto* v = found(key)) {
      if (v->is_null()) {
        out = caf::none;
        return;
      }
      bool b = false;
      flag(key, b);
      out = b;
    }
  }
  void texts(const char* key, std::vector<std::string>& out) {
    const auto* v = found(key);
    if (v == nullptr)
      return;
    if (!v->is_array())
      return bad(key);
    for (const auto& e : v->get_array()) {
      if (!e.is_string())
        return bad(key);
      out.emplace_back(e.get_string());
    }
  }
  /// The first key of the wrong type, or empty.
  const std::string& first_bad() const { return bad_; }

private:
  const json::value* found(const char* key) const {
    return bad_.empty() ? o_.if_contains(key) : nullptr;
  }
  void bad(const char* key) { bad_ = key; }
  const json::object& o_;
  std::string bad_;
};

/// The keys process_entry reads; an entry's other keys go to its extra.
bool is_entry_key(json::string_view k) {
  static constexpr const char* keys[] = {
      "process_id", "pid",       "ppid",       "parent_process_id",
      "comm",       "filenames", "exit_code",  "signal",
      "alive",      "root",      "started_ns", "exited_ns"};
  return std::any_of(std::begin(keys), std::end(keys),
                     [&](const char* x) { return k == x; });
}

} // namespace

expected<process_map> process_map_from_json(const json::object& o) {
  process_map m;
  for (const auto& kv : o) {
    auto where = "process " + std::string{kv.key()};
    if (!kv.value().is_object())
      return make_error(errc::invalid_argument, where + " is not an object");
    const auto& entry = kv.value().get_object();
    field_reader rd{entry};
    process_entry p;
    // An older store's entry may lack its id: the map's key is the id.
    p.process_id = std::string{kv.key()};
    rd.text("process_id", p.process_id);
    rd.number("pid", p.pid);
    rd.number("ppid", p.ppid);
    rd.text("parent_process_id", p.parent_process_id);
    rd.text("comm", p.comm);
    rd.texts("filenames", p.filenames);
    rd.number("exit_code", p.exit_code);
    rd.number("signal", p.signal);
    rd.flag("alive", p.alive);
    rd.flag("root", p.root);
    rd.number("started_ns", p.started_ns);
    rd.number("exited_ns", p.exited_ns);
    if (!rd.first_bad().empty())
      return make_error(errc::invalid_argument,
                        where + ": " + rd.first_bad() + " has the wrong type");
    if (p.process_id != kv.key())
      return make_error(errc::invalid_argument,
                        where + " names another process_id");
    for (const auto& f : entry)
      if (!is_entry_key(f.key()))
        p.extra.emplace(f.key(), f.value());
    if (m.find(p.process_id) == nullptr)
      m.add(std::move(p));
  }
  return m;
}

// -- the event log ------------------------------------------------------------

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

/// The kind a line's "event" names.
caf::optional<process_event_kind> parse_kind(std::string_view s) {
  for (auto k : {process_event_kind::fork, process_event_kind::exec,
                 process_event_kind::exit})
    if (to_string(k) == s)
      return k;
  return caf::none;
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
  append_json_string(out, to_string(e.kind));
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
  switch (e.kind) {
  case process_event_kind::fork:
    out += ",\"parent_process_id\":";
    append_json_string(out, e.parent_process_id);
    break;
  case process_event_kind::exec:
    out += ",\"filename\":";
    append_json_string(out, e.filename);
    break;
  case process_event_kind::exit:
    append_optional(out, ",\"exit_code\":", e.exit_code);
    append_optional(out, ",\"signal\":", e.signal);
    break;
  }
  out += "}\n";
}

caf::optional<logged_event> parse_event_line(std::string_view line) {
  boost::system::error_code ec;
  auto v = json::parse(json::string_view{line.data(), line.size()}, ec);
  if (ec || !v.is_object())
    return caf::none;
  const auto& o = v.get_object();
  const auto* kind = o.if_contains("event");
  auto k = kind != nullptr && kind->is_string()
               ? parse_kind(std::string_view{kind->get_string()})
               : caf::none;
  if (!k || !o.contains("seq"))
    return caf::none;
  logged_event out;
  auto& e = out.event;
  e.kind = *k;
  field_reader rd{o};
  rd.number("seq", out.seq);
  rd.number("pid", e.pid);
  rd.number("tid", e.tid);
  rd.text("comm", e.comm);
  rd.number("ns", e.time_ns);
  rd.text("process_id", e.process_id);
  rd.number("kernel_seq", e.kernel_seq);
  rd.text("run_id", out.run_id);
  rd.text("session_id", out.session_id);
  rd.text("agent_id", out.agent_id);
  rd.number("ppid", out.ppid);
  rd.flag("root", e.root);
  rd.text("parent_process_id", e.parent_process_id);
  rd.text("filename", e.filename);
  rd.number("exit_code", e.exit_code);
  rd.number("signal", e.signal);
  if (!rd.first_bad().empty())
    return caf::none;
  return out;
}

json::value to_json(const logged_event& e) {
  // The line's own writer, so that the wire and the log never differ.
  std::string line;
  append_event_line(line, e.seq, e.event, e.ppid,
                    event_line_ids(e.run_id, e.session_id, e.agent_id));
  return json::parse(line);
}

json::object to_json(const event_page& p) {
  json::array events;
  events.reserve(p.events.size());
  for (const auto& e : p.events)
    events.emplace_back(to_json(e));
  return {{"run_id", p.run_id},          {"events", std::move(events)},
          {"next_after", p.next_after},  {"has_more", p.has_more},
          {"state", to_string(p.state)}, {"trace_complete", p.trace_complete}};
}

// -- the tree -----------------------------------------------------------------

json::object to_json(const process_node& n) {
  json::array children;
  children.reserve(n.children.size());
  for (const auto& c : n.children)
    children.emplace_back(to_json(c));
  return {{"process_id", n.process_id},
          {"pid", n.pid},
          {"ppid", n.ppid},
          {"comm", n.comm},
          {"filenames", strings(n.filenames)},
          {"exit_code", opt(n.exit_code)},
          {"signal", opt(n.signal)},
          {"alive", opt(n.alive)},
          {"children", std::move(children)}};
}

json::object to_json(const process_tree_view& t) {
  json::array tree;
  tree.reserve(t.tree.size());
  for (const auto& n : t.tree)
    tree.emplace_back(to_json(n));
  return {{"run_id", t.run_id},
          {"state", to_string(t.state)},
          {"trace_complete", t.trace_complete},
          {"processes", t.processes},
          {"tree", std::move(tree)}};
}

json::object to_json(const execution_status& s) {
  if (!s.execution_enabled)
    return {{"enabled", false}, {"backend", "disabled"}};
  return {{"enabled", s.tracked},
          {"backend", s.tracked ? "ebpf" : "disabled"},
          {"abi", 1},
          {"ready", true},
          {"error", nullptr},
          {"execution_enabled", true},
          {"cgroup_root", s.cgroup_root},
          {"audit_root", s.audit_root},
          {"isolation", "bubblewrap"},
          {"cgroup_controllers", strings(s.cgroup_controllers)},
          {"store_devices", strings(s.store_devices)},
          {"store_quotas", s.store_quotas},
          {"store_quota_mode", s.store_quota_mode}};
}

} // namespace allox
