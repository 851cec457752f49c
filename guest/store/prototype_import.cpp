// SPDX-License-Identifier: Apache-2.0
#include "guest/store/prototype_import.hpp"

#include "guest/log.hpp"
#include "guest/os/fs.hpp"
#include "messages/ids.hpp"
#include "messages/share.hpp"

#include <fstream>
#include <set>
#include <sstream>

namespace allox::store {

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// "<name>.<ext>" -> "<name>" when the extension matches.
bool strip(std::string& name, std::string_view ext) {
  if (name.size() <= ext.size() ||
      name.compare(name.size() - ext.size(), ext.size(), ext) != 0)
    return false;
  name.resize(name.size() - ext.size());
  return true;
}

std::string text_or_empty(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string{v->get_string()} : std::string{};
}

/// An id the prototype may leave null (or empty): none then.
caf::optional<std::string> id_or_none(const json::object& o,
                                      std::string_view key) {
  auto id = text_or_empty(o, key);
  if (id.empty())
    return caf::none;
  return id;
}

void read_index(const std::string& file, const std::string& a,
                const std::string& s, prototype_store& out) {
  boost::system::error_code ec;
  auto doc = json::parse(slurp(file), ec);
  if (ec || !doc.is_object() ||
      doc.as_object().if_contains("version") == nullptr ||
      doc.as_object().at("version") != 1) {
    log::warn("import", "skipping unreadable checkpoint index " + file);
    return;
  }
  const auto& o = doc.as_object();
  session_row row{a, s, 0, false, id_or_none(o, "head"), caf::none};
  out.rows.sessions.push_back(row);
  auto* cps = o.if_contains("checkpoints");
  if (cps == nullptr || !cps->is_object())
    return;
  for (const auto& kv : cps->as_object()) {
    std::string id{kv.key()};
    if (!is_valid_id(id) || !kv.value().is_object())
      continue;
    const auto& e = kv.value().as_object();
    checkpoint_row c;
    c.agent_id = a;
    c.session_id = s;
    c.checkpoint_id = id;
    if (auto* t = e.if_contains("created_at_ns"); t && t->is_int64())
      c.created_at_ns = t->as_int64();
    c.origin = text_or_empty(e, "origin");
    if (auto* m = e.if_contains("message"); m && m->is_string()) {
      c.message = std::string{m->get_string()};
    }
    if (auto* p = e.if_contains("pinned"); p && p->is_bool())
      c.pinned = p->as_bool();
    if (auto* m = e.if_contains("metadata"); m && m->is_object())
      c.metadata = json::serialize(*m);
    if (auto* m = e.if_contains("missing"); m && m->is_bool())
      c.missing = m->as_bool();
    c.parent_id = id_or_none(e, "parent_id");
    out.rows.checkpoints.push_back(std::move(c));
  }
}

void read_events(const std::string& file, const std::string& a,
                 const std::string& s, prototype_store& out) {
  std::ifstream in{file};
  std::string line;
  while (std::getline(in, line)) {
    boost::system::error_code ec;
    auto doc = json::parse(line, ec);
    if (ec || !doc.is_object())
      continue; // a torn last line of an append-only log
    auto o = std::move(doc.as_object());
    audit_event e;
    e.op = text_or_empty(o, "op");
    if (e.op.empty())
      continue;
    if (auto* t = o.if_contains("timestamp_ns"); t && t->is_int64())
      e.timestamp_ns = t->as_int64();
    e.agent_id = a.empty() ? text_or_empty(o, "agent_id") : a;
    e.session_id = s.empty() ? text_or_empty(o, "session_id") : s;
    for (auto key : {"op", "timestamp_ns", "agent_id", "session_id"})
      o.erase(key);
    o["imported_from"] = "prototype";
    e.fields = json::serialize(o);
    out.events.push_back(std::move(e));
  }
}

caf::error read_transaction(const std::string& file, const std::string& a,
                            const std::string& s, prototype_store& out) {
  auto bad = [&](const std::string& why) {
    return make_error(errc::internal,
                      "invalid rollback transaction " + file + ": " + why);
  };
  boost::system::error_code ec;
  auto doc = json::parse(slurp(file), ec);
  if (ec)
    return bad("not JSON");
  if (!doc.is_object())
    return bad("rollback transaction root must be an object");
  const auto& o = doc.as_object();
  if (o.if_contains("version") == nullptr || o.at("version") != 1)
    return bad("unsupported rollback transaction version");
  auto phase = text_or_empty(o, "phase");
  static const std::set<std::string> phases{"preparing", "prepared",
                                            "old_moved", "committed"};
  if (phases.count(phase) == 0)
    return bad("invalid rollback transaction phase");
  auto id = text_or_empty(o, "checkpoint_id");
  if (!is_valid_id(id))
    return bad("invalid checkpoint id");
  auto restore = text_or_empty(o, "restore_name");
  auto discard = text_or_empty(o, "discard_name");
  auto safe = [](const std::string& name, std::string_view prefix) {
    return name.rfind(prefix, 0) == 0 && name.find('/') == std::string::npos &&
           name.size() > prefix.size();
  };
  if (!safe(restore, ".restore-") || !safe(discard, ".discard-"))
    return bad("rollback transaction contains an unsafe path");
  bool scrub = true;
  if (auto* v = o.if_contains("scrub_runtime"); v && v->is_bool())
    scrub = v->as_bool();
  out.rows.journals.push_back({a, s, "rollback", phase, id, restore, discard,
                               scrub, text_or_empty(o, "origin"), ""});
  return caf::none;
}

/// Calls `fn(agent, session, path)` for <dir>/<a>/<s><ext> files.
template <class F>
caf::error each_session_file(const std::string& dir, std::string_view ext,
                             F fn) {
  auto agents = os::list_dir(dir);
  if (!agents)
    return caf::none;
  for (const auto& a : *agents) {
    if (!is_valid_id(a) ||
        os::kind_of(dir + "/" + a) != os::entry_kind::directory)
      continue;
    auto files = os::list_dir(dir + "/" + a);
    if (!files)
      continue;
    for (auto name : *files) {
      auto path = dir + "/" + a + "/" + name;
      if (!strip(name, ext) || !is_valid_id(name))
        continue;
      if (auto err = fn(a, name, path))
        return err;
    }
  }
  return caf::none;
}

} // namespace

expected<prototype_store> read_prototype_store(const layout& paths) {
  prototype_store out;
  auto meta = paths.metadata_dir();
  auto indexes = meta + "/indexes";
  auto events = meta + "/events";
  auto transactions = meta + "/transactions";
  for (const auto& d : {indexes, events, transactions})
    if (os::kind_of(d) == os::entry_kind::directory)
      out.found = true;
  if (!out.found)
    return out;
  each_session_file(indexes, ".json", [&](auto& a, auto& s, auto& path) {
    read_index(path, a, s, out);
    return caf::error{};
  });
  // Share policies of the sessions found ({enabled, scope, permission};
  // anything unreadable in one is its default).
  each_session_file(
      meta + "/shares", ".json", [&](auto& a, auto& s, auto& path) {
        for (auto& row : out.rows.sessions)
          if (row.agent_id == a && row.session_id == s)
            row.share_policy =
                serialize_share_policy(parse_share_policy(slurp(path)));
        return caf::error{};
      });
  if (os::kind_of(events + "/store.jsonl") == os::entry_kind::other)
    read_events(events + "/store.jsonl", "", "", out);
  if (auto agents = os::list_dir(events)) {
    for (const auto& a : *agents) {
      if (!is_valid_id(a))
        continue;
      auto agent_log = events + "/" + a + "/agent.jsonl";
      if (os::kind_of(agent_log) == os::entry_kind::other)
        read_events(agent_log, a, "", out);
    }
  }
  each_session_file(events, ".jsonl", [&](auto& a, auto& s, auto& path) {
    if (s != "agent")
      read_events(path, a, s, out);
    return caf::error{};
  });
  if (auto err = each_session_file(transactions, ".json",
                                   [&](auto& a, auto& s, auto& path) {
                                     return read_transaction(path, a, s, out);
                                   }))
    return err;
  std::set<std::string> agents;
  for (const auto& s : out.rows.sessions)
    if (agents.insert(s.agent_id).second)
      out.rows.agents.push_back({s.agent_id, 0, false});
  out.summary["checkpoint_indexes"] = out.rows.sessions.size();
  out.summary["checkpoints"] = out.rows.checkpoints.size();
  out.summary["audit_events"] = out.events.size();
  out.summary["transactions"] = out.rows.journals.size();
  return out;
}

} // namespace allox::store
