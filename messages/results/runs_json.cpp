// SPDX-License-Identifier: Apache-2.0
#include "messages/results/runs_json.hpp"

#include "messages/results/json_detail.hpp"
#include "messages/results/processes_json.hpp"
#include "messages/utf8.hpp"

#include <array>
#include <utility>

namespace allox {

namespace {

constexpr std::array<std::pair<run_phase, std::string_view>, 6> phase_names{{
    {run_phase::starting, "starting"},
    {run_phase::running, "running"},
    {run_phase::completed, "completed"},
    {run_phase::stopped, "stopped"},
    {run_phase::failed, "failed"},
    {run_phase::interrupted, "interrupted"},
}};

using results_detail::opt;

/// True for an array of strings only.
bool all_strings(const json::value& v) {
  if (!v.is_array())
    return false;
  for (const auto& e : v.get_array())
    if (!e.is_string())
      return false;
  return true;
}

std::vector<std::string> strings_of(const json::array& a) {
  std::vector<std::string> out;
  out.reserve(a.size());
  for (const auto& e : a)
    out.emplace_back(e.get_string());
  return out;
}

/// Reads the known keys of a row; remembers the first wrongly typed one.
class row_reader {
public:
  void text(const json::value& v, std::string& out) {
    if (v.is_string())
      out = std::string{v.get_string()};
    else
      bad();
  }
  void text(const json::value& v, caf::optional<std::string>& out) {
    if (v.is_null())
      out = caf::none;
    else if (v.is_string())
      out = std::string{v.get_string()};
    else
      bad();
  }
  void number(const json::value& v, int64_t& out) {
    if (v.is_int64())
      out = v.get_int64();
    else if (v.is_uint64())
      out = static_cast<int64_t>(v.get_uint64());
    else
      bad();
  }
  void number(const json::value& v, caf::optional<int64_t>& out) {
    if (v.is_null()) {
      out = caf::none;
      return;
    }
    int64_t n = 0;
    number(v, n);
    out = n;
  }
  void flag(const json::value& v, bool& out) {
    if (v.is_bool())
      out = v.get_bool();
    else
      bad();
  }
  void processes(const json::value& v, process_map& out) {
    if (!v.is_object())
      return bad();
    auto m = process_map_from_json(v.get_object());
    if (!m)
      return bad();
    out = std::move(*m);
  }
  void phase(const json::value& v, run_phase& out) {
    auto p = v.is_string() ? parse_run_phase(v.get_string()) : caf::none;
    if (p)
      out = *p;
    else
      bad();
  }
  /// Names the key the next reads are for.
  void at(std::string_view key) { key_ = key; }
  const std::string& first_bad() const { return first_bad_; }

private:
  void bad() {
    if (first_bad_.empty())
      first_bad_ = std::string{key_};
  }
  std::string_view key_;
  std::string first_bad_;
};

} // namespace

std::string_view to_string(run_phase p) {
  for (const auto& [phase, name] : phase_names)
    if (phase == p)
      return name;
  return "unknown";
}

caf::optional<run_phase> parse_run_phase(std::string_view s) {
  for (const auto& [phase, name] : phase_names)
    if (name == s)
      return phase;
  return caf::none;
}

json::object to_json(const run_row& r) {
  json::object o;
  o.reserve(31 + r.unknown.size());
  o["run_id"] = r.run_id;
  o["agent_id"] = r.agent_id;
  o["session_id"] = r.session_id;
  o["backend"] = r.backend;
  o["isolation"] = r.isolation;
  o["boot_id"] = r.boot_id;
  o["state"] = to_string(r.state);
  o["created_ns"] = r.created_ns;
  o["event_count"] = r.event_count;
  o["processes"] = to_json(r.processes);
  o["audit_directory"] = r.audit_directory;
  o["trace_complete"] = r.trace_complete;
  o["cookie"] = r.cookie;
  o["root_pid"] = opt(r.root_pid);
  o["cgroup"] = r.cgroup;
  o["root_exit_code"] = opt(r.root_exit_code);
  o["stop_reason"] = opt(r.stop_reason);
  o["session_fenced"] = r.session_fenced;
  o["lifecycle_complete"] = r.lifecycle_complete;
  o["finished_ns"] = opt(r.finished_ns);
  o["error"] = opt(r.error);
  o["provider_error"] = opt(r.provider_error);
  if (r.network_mode)
    o["network_mode"] = *r.network_mode;
  if (r.limits)
    o["limits"] = *r.limits;
  if (r.argv) {
    json::array argv;
    argv.reserve(r.argv->size());
    for (const auto& arg : *r.argv)
      argv.emplace_back(arg);
    o["argv"] = std::move(argv);
  }
  if (r.stdin_mode)
    o["stdin"] = *r.stdin_mode;
  if (r.events_lost)
    o["events_lost"] = *r.events_lost;
  if (r.root_process_id)
    o["root_process_id"] = *r.root_process_id;
  if (r.auto_checkpoint)
    o["auto_checkpoint"] = *r.auto_checkpoint;
  for (const auto& kv : r.unknown)
    o[kv.key()] = kv.value();
  return o;
}

expected<run_row> run_row_from_json(const json::object& o) {
  run_row r;
  row_reader rd;
  for (const auto& kv : o) {
    auto key = kv.key();
    const auto& v = kv.value();
    rd.at(key);
    if (key == "run_id")
      rd.text(v, r.run_id);
    else if (key == "agent_id")
      rd.text(v, r.agent_id);
    else if (key == "session_id")
      rd.text(v, r.session_id);
    else if (key == "backend")
      rd.text(v, r.backend);
    else if (key == "isolation")
      rd.text(v, r.isolation);
    else if (key == "boot_id")
      rd.text(v, r.boot_id);
    else if (key == "state")
      rd.phase(v, r.state);
    else if (key == "created_ns")
      rd.number(v, r.created_ns);
    else if (key == "event_count")
      rd.number(v, r.event_count);
    else if (key == "processes")
      rd.processes(v, r.processes);
    else if (key == "audit_directory")
      rd.text(v, r.audit_directory);
    else if (key == "trace_complete")
      rd.flag(v, r.trace_complete);
    else if (key == "cookie")
      rd.number(v, r.cookie);
    else if (key == "root_pid")
      rd.number(v, r.root_pid);
    else if (key == "cgroup")
      rd.text(v, r.cgroup);
    else if (key == "root_exit_code")
      rd.number(v, r.root_exit_code);
    else if (key == "stop_reason")
      rd.text(v, r.stop_reason);
    else if (key == "session_fenced")
      rd.flag(v, r.session_fenced);
    else if (key == "lifecycle_complete")
      rd.flag(v, r.lifecycle_complete);
    else if (key == "finished_ns")
      rd.number(v, r.finished_ns);
    else if (key == "error")
      rd.text(v, r.error);
    else if (key == "provider_error")
      rd.text(v, r.provider_error);
    else if (key == "network_mode" && v.is_string())
      r.network_mode = std::string{v.get_string()};
    else if (key == "limits" && v.is_object())
      r.limits = v.get_object();
    else if (key == "argv" && all_strings(v))
      r.argv = strings_of(v.get_array());
    else if (key == "stdin" && v.is_string())
      r.stdin_mode = std::string{v.get_string()};
    else if (key == "events_lost" && v.is_int64())
      r.events_lost = v.get_int64();
    else if (key == "root_process_id" && v.is_string())
      r.root_process_id = std::string{v.get_string()};
    else if (key == "auto_checkpoint" && v.is_object())
      r.auto_checkpoint = v.get_object();
    else
      // Unknown keys, and optional ones of another type (kept as they are).
      r.unknown[key] = v;
  }
  if (!rd.first_bad().empty())
    return make_error(errc::invalid_argument,
                      "run row: " + rd.first_bad() + " has the wrong type");
  if (r.run_id.empty())
    return make_error(errc::invalid_argument, "run row: no run_id");
  return r;
}

expected<run_row> run_row_from_text(const std::string& text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object())
    return make_error(errc::invalid_argument, "run row: not a JSON object");
  return run_row_from_json(v.get_object());
}

json::object to_json(const output_slice& s) {
  json::object o{{"run_id", s.run_id}, {"stream", s.stream},
                 {"offset", s.offset}, {"next_offset", s.next_offset},
                 {"size", s.size},     {"data", valid_utf8(s.data)},
                 {"eof", s.eof},       {"state", to_string(s.state)}};
  // Only when set: the prototype's answer has no such key.
  if (s.logs_removed)
    o["logs_removed"] = true;
  return o;
}

json::value to_json(const run_list& l) {
  json::array rows;
  rows.reserve(l.runs.size());
  for (const auto& row : l.runs) {
    auto wire = to_json(row);
    // The rows of a list never carried their process maps; erasing moves
    // the last key into the place of `processes`, as the wire has it.
    wire.erase("processes");
    rows.emplace_back(std::move(wire));
  }
  if (!l.paged)
    return rows;
  json::value next = nullptr;
  if (l.next_cursor)
    next = *l.next_cursor;
  return json::object{{"agent_id", l.agent_id},
                      {"session_id", l.session_id},
                      {"runs", std::move(rows)},
                      {"has_more", l.has_more},
                      {"next_cursor", std::move(next)}};
}

json::object to_json(const input_result& r) {
  return {{"run_id", r.run_id}, {"written", r.written}, {"eof", r.eof}};
}

json::object to_json(const resize_result& r) {
  return {{"run_id", r.run_id}, {"rows", r.rows}, {"cols", r.cols}};
}

json::object to_json(const run_subscription& s) {
  return {{"row", to_json(s.row)}, {"dir", s.dir}};
}

} // namespace allox
