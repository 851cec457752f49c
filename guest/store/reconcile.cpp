#include "guest/store/reconcile.hpp"

#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "messages/ids.hpp"

#include <sys/stat.h>

#include <map>
#include <set>

namespace allox::store {

namespace {

bool is_trash(const std::string& name) {
  return name.rfind(trash_prefix, 0) == 0;
}

audit_event event(const std::string& op, const std::string& a,
                  const std::string& s, json::object fields) {
  return {os::now_ns(), op, a, s, json::serialize(fields)};
}

// Moves a directory whose deletion was interrupted into the trash and
// purges it.
caf::error finish_deletion(const std::string& dir, const std::string& parent) {
  if (os::kind_of(dir) == os::entry_kind::missing)
    return caf::none;
  auto trash = parent + "/" + std::string{trash_prefix} + random_hex_token();
  if (auto err = os::rename_path(dir, trash))
    return err;
  return os::remove_tree(trash);
}

size_t purge_trash(const std::string& dir) {
  size_t purged = 0;
  auto names = os::list_dir(dir);
  if (!names)
    return 0;
  for (const auto& n : *names) {
    if (!is_trash(n))
      continue;
    if (auto err = os::remove_tree(dir + "/" + n))
      log::warn("reconcile", "cannot purge " + dir + "/" + n + ": "
                               + message_of(err));
    else
      ++purged;
  }
  return purged;
}

} // namespace

expected<reconcile_result> reconcile(const layout& paths,
                                     const catalog_snapshot& rows) {
  reconcile_result r;
  json::array adopted_agents, adopted_sessions, forgotten, finished;
  if (auto err = os::ensure_managed_dir(paths.agents_dir(), 0755,
                                        "agents directory"))
    return err;
  size_t purged = purge_trash(paths.agents_dir());

  // Interrupted deletions: the row says `deleting`, so finish the job.
  std::set<std::string> deleted_agents;
  for (const auto& a : rows.agents) {
    if (!a.deleting)
      continue;
    if (auto err = finish_deletion(paths.agent_dir(a.agent_id),
                                   paths.agents_dir()))
      return err;
    deleted_agents.insert(a.agent_id);
    r.changes.delete_agents.push_back(a.agent_id);
    r.changes.audit.push_back(event("agent.delete", a.agent_id, {},
                                    {{"origin", "recovery"}}));
    finished.emplace_back(a.agent_id);
  }
  std::set<std::pair<std::string, std::string>> deleted_sessions;
  for (const auto& s : rows.sessions) {
    if (!s.deleting || deleted_agents.count(s.agent_id) > 0)
      continue;
    if (auto err = finish_deletion(paths.session_dir(s.agent_id, s.session_id),
                                   paths.sessions_dir(s.agent_id)))
      return err;
    deleted_sessions.insert({s.agent_id, s.session_id});
    r.changes.delete_sessions.push_back({s.agent_id, s.session_id});
    r.changes.audit.push_back(event("session.delete", s.agent_id,
                                    s.session_id, {{"origin", "recovery"}}));
    finished.emplace_back(session_key(s.agent_id, s.session_id));
  }

  // What the disk holds.
  std::map<std::string, std::set<std::string>> on_disk;
  auto agent_names = os::list_dir(paths.agents_dir());
  if (!agent_names)
    return agent_names.error();
  for (const auto& a : *agent_names) {
    if (!is_valid_id(a) || deleted_agents.count(a) > 0)
      continue;
    if (os::kind_of(paths.agent_dir(a)) != os::entry_kind::directory
        || os::kind_of(paths.sessions_dir(a)) != os::entry_kind::directory)
      continue;
    auto& sessions = on_disk[a];
    purged += purge_trash(paths.sessions_dir(a));
    auto names = os::list_dir(paths.sessions_dir(a));
    if (!names)
      return names.error();
    for (const auto& s : *names) {
      if (!is_valid_id(s) || deleted_sessions.count({a, s}) > 0)
        continue;
      if (os::kind_of(paths.session_dir(a, s)) != os::entry_kind::directory)
        continue;
      auto current = paths.current(a, s);
      if (os::kind_of(current) != os::entry_kind::directory)
        continue;
      // A crash right after the subvolume was made can leave .allox-tmp
      // missing; every session has one.
      auto tmp = current + "/.allox-tmp";
      if (os::kind_of(tmp) == os::entry_kind::missing)
        ::mkdir(tmp.c_str(), 0700);
      sessions.insert(s);
    }
  }

  // Rows against disk.
  std::set<std::string> agent_rows;
  for (const auto& a : rows.agents) {
    if (a.deleting)
      continue;
    agent_rows.insert(a.agent_id);
    if (on_disk.count(a.agent_id) == 0) {
      r.changes.delete_agents.push_back(a.agent_id);
      r.changes.audit.push_back(event("agent.forget", a.agent_id, {},
                                      {{"reason", "workspace missing"}}));
      forgotten.emplace_back(a.agent_id);
      log::warn("reconcile", "agent " + a.agent_id
                               + " has no workspace on disk; forgotten");
      continue;
    }
    r.agents.push_back(a);
  }
  std::set<std::pair<std::string, std::string>> session_rows;
  for (const auto& s : rows.sessions) {
    if (s.deleting || deleted_agents.count(s.agent_id) > 0)
      continue;
    session_rows.insert({s.agent_id, s.session_id});
    auto it = on_disk.find(s.agent_id);
    if (it == on_disk.end() || it->second.count(s.session_id) == 0) {
      r.changes.delete_sessions.push_back({s.agent_id, s.session_id});
      r.changes.audit.push_back(event("session.forget", s.agent_id,
                                      s.session_id,
                                      {{"reason", "workspace missing"}}));
      forgotten.emplace_back(session_key(s.agent_id, s.session_id));
      log::warn("reconcile", "session " + session_key(s.agent_id, s.session_id)
                               + " has no workspace on disk; forgotten");
      continue;
    }
    r.sessions.push_back(s);
  }
  auto now = os::now_ns();
  for (const auto& [a, sessions] : on_disk) {
    if (agent_rows.count(a) == 0) {
      agent_row row{a, now, false};
      r.changes.put_agents.push_back(row);
      r.changes.audit.push_back(event("agent.adopt", a, {}, {}));
      r.agents.push_back(row);
      adopted_agents.emplace_back(a);
    }
    for (const auto& s : sessions) {
      if (session_rows.count({a, s}) > 0)
        continue;
      session_row row{a, s, now, false};
      r.changes.put_sessions.push_back(row);
      r.changes.audit.push_back(event("session.adopt", a, s, {}));
      r.sessions.push_back(row);
      adopted_sessions.emplace_back(session_key(a, s));
    }
  }
  r.summary["adopted_agents"] = std::move(adopted_agents);
  r.summary["adopted_sessions"] = std::move(adopted_sessions);
  r.summary["forgotten"] = std::move(forgotten);
  r.summary["finished_deletions"] = std::move(finished);
  r.summary["purged_trash"] = purged;
  return r;
}

} // namespace allox::store
