// SPDX-License-Identifier: Apache-2.0
#include "guest/store/reconcile.hpp"
#include "guest/store/upload_marks.hpp"

#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "guest/store/checkpoint_dag.hpp"
#include "guest/store/create_intent.hpp"
#include "guest/store/fork_recovery.hpp"
#include "guest/store/workspace_ops.hpp"
#include "messages/ids.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <optional>
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

size_t purge_trash(const std::string& dir) {
  size_t purged = 0;
  auto names = os::list_dir(dir);
  if (!names)
    return 0;
  for (const auto& n : *names) {
    if (!is_trash(n))
      continue;
    if (auto err = os::remove_tree(dir + "/" + n))
      log::warn("reconcile",
                "cannot purge " + dir + "/" + n + ": " + message_of(err));
    else
      ++purged;
  }
  return purged;
}

bool phase_at_least_prepared(const std::string& phase) {
  return phase == "prepared" || phase == "old_moved" || phase == "committed";
}

/// What the filesystem half of recovery did for one session directory.
struct swap_recovery {
  /// A rollback journal was resolved; `commit` says which way.
  bool journal = false;
  bool commit = false;
  /// Leftover .restore-/.discard- entries without a journal were removed.
  bool orphans = false;
};

/// Finishes or undoes an interrupted rollback from what is on disk (the
/// journal's phase only breaks ties):
///   current missing: between the two renames; the restore wins from
///                    `prepared` on, else the discard goes back;
///   current present: a remaining restore means the second rename never
///                    happened (abort); a remaining discard without a
///                    restore means both happened (commit); neither means
///                    nothing started, unless a prototype journal says
///                    `committed`.
/// Leftovers are deleted. Runs before the session's presence is decided,
/// so a session caught between the two renames is never taken for gone.
expected<bool> finish_swap(const layout& paths, const journal_row& j) {
  const auto& a = j.agent_id;
  const auto& s = j.session_id;
  auto has = [&](const std::string& name) {
    return !name.empty() && exists_in_session(paths, a, s, name);
  };
  bool current = has("current");
  bool restore = has(j.restore_name);
  bool discard = has(j.discard_name);
  bool commit = false;
  if (!current) {
    if (restore && phase_at_least_prepared(j.phase)) {
      if (auto err = rename_in_session(paths, a, s, j.restore_name, "current"))
        return err;
      commit = true;
    } else if (discard) {
      if (auto err = rename_in_session(paths, a, s, j.discard_name, "current"))
        return err;
    } else {
      return make_error(errc::internal,
                        "rollback recovery has no current workspace: " + a +
                            "/" + s);
    }
  } else if (!restore) {
    commit = discard || j.phase == "committed";
  }
  for (const auto& name : {j.restore_name, j.discard_name})
    if (has(name))
      if (auto err = remove_in_session(paths, a, s, name))
        return err;
  return commit;
}

/// Leftover .restore-/.discard- entries without a journal (the prototype's
/// "orphan" case, or a crash before the first journal write).
expected<bool> remove_orphans(const layout& paths, const std::string& a,
                              const std::string& s) {
  auto restores = session_entries(paths, a, s, restore_prefix);
  auto discards = session_entries(paths, a, s, discard_prefix);
  if (restores.empty() && discards.empty())
    return false;
  if (!exists_in_session(paths, a, s, "current")) {
    if (discards.size() != 1)
      return make_error(errc::internal,
                        "cannot recover orphan rollback for " + a + "/" + s);
    if (auto err = rename_in_session(paths, a, s, discards.front(), "current"))
      return err;
    discards.clear();
  }
  for (const auto& list : {restores, discards})
    for (const auto& name : list)
      if (auto err = remove_in_session(paths, a, s, name))
        return err;
  return true;
}

expected<swap_recovery> recover_swap(const layout& paths, const std::string& a,
                                     const std::string& s,
                                     const journal_row* journal) {
  swap_recovery out;
  if (journal != nullptr && journal->op == "rollback") {
    auto commit = finish_swap(paths, *journal);
    if (!commit)
      return commit.error();
    out.journal = true;
    out.commit = *commit;
  }
  auto orphans = remove_orphans(paths, a, s);
  if (!orphans)
    return orphans.error();
  out.orphans = *orphans;
  return out;
}

/// Creations interrupted between their intent record and the catalog row,
/// oldest first: a record whose snapshot exists becomes its row, and the
/// head moves to it from its parent (a creation ends as the head, and
/// normally nothing of the session reached the catalog after it); a record
/// without a snapshot
/// was never finished and is dropped. Records whose row is already in the
/// catalog are stale. Records that became rows are removed only after the
/// start-up commit (`settled`), so a crash before it finds them again.
/// True when a creation was interrupted.
bool recover_creations(const layout& paths, const std::string& a,
                       const std::string& s,
                       const std::vector<std::string>& names,
                       checkpoint_dag& dag, metadata_write& changes,
                       std::vector<intent_ref>& settled) {
  bool interrupted = false;
  std::vector<checkpoint_row> records;
  for (const auto& id : create_intents(names)) {
    if (dag.find(id) != nullptr) {
      settled.push_back({a, s, id});
      continue;
    }
    bool snapshot =
        is_valid_id(id) &&
        os::kind_of(paths.checkpoint(a, s, id)) == os::entry_kind::directory;
    auto record = read_create_intent(paths, a, s, id);
    if (snapshot && record) {
      records.push_back(std::move(*record));
      continue;
    }
    if (snapshot) // cannot happen unless the record was damaged: adopt it
      log::warn("reconcile", "checkpoint " + id + " of " + session_key(a, s) +
                                 ": " + message_of(record.error()));
    else
      changes.audit.push_back(
          event("checkpoint.create.recovered", a, s,
                {{"checkpoint_id", id}, {"outcome", "aborted"}}));
    clear_create_intent(paths, a, s, id);
    interrupted = true;
  }
  std::sort(records.begin(), records.end(), [](const auto& x, const auto& y) {
    return x.created_at_ns < y.created_at_ns;
  });
  for (auto& row : records) {
    row.generation =
        snapshot_generation(paths.checkpoint(a, s, row.checkpoint_id));
    if (row.parent_id && dag.find(*row.parent_id) == nullptr)
      row.parent_id = caf::none;
    dag.adopt(row);
    // A creation moves the head from its parent; if the head has moved on
    // since (the caller was told it failed after all), it is a branch. The
    // tree a rollback replaced is always a branch: the head is the
    // rollback's target.
    if (dag.head() == row.parent_id && row.origin != "pre-rollback")
      dag.move_head(row.checkpoint_id);
    changes.put_checkpoints.push_back(row);
    json::object fields{{"checkpoint_id", row.checkpoint_id},
                        {"origin", row.origin},
                        {"pinned", row.pinned},
                        {"recovered", true}};
    fields["message"] =
        row.message ? json::value(*row.message) : json::value(nullptr);
    fields["metadata"] =
        row.metadata ? json::parse(*row.metadata) : json::value(nullptr);
    changes.audit.push_back(event("checkpoint.create", a, s, fields));
    changes.audit.push_back(event(
        "checkpoint.create.recovered", a, s,
        {{"checkpoint_id", row.checkpoint_id}, {"outcome", "committed"}}));
    log::warn("reconcile", "checkpoint " + row.checkpoint_id + " of " +
                               session_key(a, s) +
                               " recovered from its intent record");
    settled.push_back({a, s, row.checkpoint_id});
    interrupted = true;
  }
  return interrupted;
}

/// Rows against snapshots: rows without a snapshot are marked missing,
/// snapshots without a row (made outside the daemon) are adopted.
void reconcile_checkpoints(const layout& paths, const std::string& a,
                           const std::string& s,
                           const std::vector<std::string>& names,
                           checkpoint_dag& dag, metadata_write& changes) {
  std::set<std::string> on_disk;
  for (auto& n : names)
    if (is_valid_id(n) &&
        os::kind_of(paths.checkpoint(a, s, n)) == os::entry_kind::directory)
      on_disk.insert(n);
  for (const auto& row : dag.rows()) {
    bool missing = on_disk.count(row.checkpoint_id) == 0;
    if (missing != row.missing) {
      auto changed = row;
      changed.missing = missing;
      changes.put_checkpoints.push_back(changed);
      dag.set_missing(row.checkpoint_id, missing);
    }
  }
  for (const auto& id : on_disk) {
    if (dag.find(id) != nullptr)
      continue;
    checkpoint_row row;
    row.agent_id = a;
    row.session_id = s;
    row.checkpoint_id = id;
    row.origin = "filesystem-recovery";
    row.generation = snapshot_generation(paths.checkpoint(a, s, id));
    dag.adopt(row);
    changes.put_checkpoints.push_back(row);
    changes.audit.push_back(
        event("checkpoint.adopt", a, s, {{"checkpoint_id", id}}));
  }
  // The prototype's rule: a head whose snapshot is gone becomes null.
  if (dag.head() && dag.find(*dag.head())->missing)
    dag.clear_head();
}

/// The catalog half of recovery for one live session: the head after a
/// recovered rollback (and its runtime scrub, also here, unlike the
/// prototype), interrupted checkpoint creations and deletions, and the
/// checkpoint rows against the snapshots on disk.
caf::error recover_session(const layout& paths, session_row& row,
                           std::vector<checkpoint_row> rows,
                           const journal_row* journal,
                           const swap_recovery& swap, metadata_write& changes,
                           std::vector<checkpoint_row>& out,
                           std::vector<intent_ref>& settled_intents,
                           std::vector<std::string>& recovered_sessions) {
  const auto& a = row.agent_id;
  const auto& s = row.session_id;
  checkpoint_dag dag{std::move(rows), row.head};
  auto before_head = dag.head();
  bool recovered = swap.orphans;
  if (swap.orphans)
    changes.audit.push_back(event("session.rollback.recovered", a, s,
                                  {{"outcome", "aborted-orphan"}}));
  if (journal != nullptr) {
    recovered = true;
    if (journal->op == "rollback") {
      json::object fields{{"checkpoint_id", journal->checkpoint_id},
                          {"outcome", swap.commit ? "committed" : "aborted"}};
      if (swap.commit) {
        if (journal->scrub_runtime) {
          auto removed = scrub_runtime(paths.current(a, s));
          if (!removed)
            return removed.error();
          json::array entries;
          for (auto& e : *removed)
            entries.emplace_back(e);
          fields["removed_runtime_entries"] = std::move(entries);
        }
        dag.move_head(journal->checkpoint_id);
      }
      changes.audit.push_back(
          event("session.rollback.recovered", a, s, std::move(fields)));
      log::warn("reconcile", "rollback of " + session_key(a, s) + " to " +
                                 journal->checkpoint_id + " recovered: " +
                                 (swap.commit ? "committed" : "aborted"));
    } else if (journal->op == "checkpoint.delete") {
      if (auto err = delete_checkpoint(paths, a, s, journal->checkpoint_id))
        return err;
      if (auto* victim = dag.find(journal->checkpoint_id)) {
        changes.delete_checkpoints.push_back(*victim);
        for (auto& moved : dag.remove(journal->checkpoint_id))
          changes.put_checkpoints.push_back(moved);
      }
      changes.audit.push_back(event("checkpoint.delete", a, s,
                                    {{"checkpoint_id", journal->checkpoint_id},
                                     {"origin", journal->origin},
                                     {"recovered", true}}));
    }
    changes.delete_journals.push_back({a, s});
  }
  // After the swap: uploads cut short left their temporary entries in the
  // tree that is current now (or in shared/).
  if (auto cleaned = clean_upload_leftovers(paths, a, s); !cleaned) {
    log::warn("reconcile", "upload leftovers of " + session_key(a, s) + ": " +
                               message_of(cleaned.error()));
  } else if (!cleaned->empty()) {
    json::array targets;
    for (auto& t : *cleaned)
      targets.emplace_back(t);
    changes.audit.push_back(
        event("file.upload.recovered", a, s,
              {{"paths", std::move(targets)}, {"outcome", "removed"}}));
    recovered = true;
  }
  // One listing serves both: intent records are never valid ids.
  auto listed = os::list_dir(paths.checkpoints_dir(a, s));
  auto names = listed ? std::move(*listed) : std::vector<std::string>{};
  if (recover_creations(paths, a, s, names, dag, changes, settled_intents))
    recovered = true;
  reconcile_checkpoints(paths, a, s, names, dag, changes);
  if (dag.head() != before_head)
    changes.set_heads.push_back({a, s, dag.head()});
  row.head = dag.head();
  for (const auto& r : dag.rows())
    out.push_back(r);
  if (recovered)
    recovered_sessions.emplace_back(session_key(a, s));
  return caf::none;
}

} // namespace

expected<reconcile_result> reconcile(const layout& paths,
                                     const catalog_snapshot& rows) {
  reconcile_result r;
  auto& sum = r.summary;
  auto& adopted_agents = sum.adopted_agents;
  auto& adopted_sessions = sum.adopted_sessions;
  auto& forgotten = sum.forgotten;
  auto& finished = sum.finished_deletions;
  if (auto err =
          os::ensure_managed_dir(paths.agents_dir(), 0755, "agents directory"))
    return err;
  size_t purged = purge_trash(paths.agents_dir());

  // Interrupted deletions: the row says `deleting`, so finish the job.
  std::set<std::string> deleted_agents;
  for (const auto& a : rows.agents) {
    if (!a.deleting)
      continue;
    if (auto err =
            remove_via_trash(paths.agent_dir(a.agent_id), paths.agents_dir()))
      return err;
    deleted_agents.insert(a.agent_id);
    r.changes.delete_agents.push_back(a.agent_id);
    r.changes.audit.push_back(
        event("agent.delete", a.agent_id, {}, {{"origin", "recovery"}}));
    finished.emplace_back(a.agent_id);
  }
  std::set<std::pair<std::string, std::string>> deleted_sessions;
  for (const auto& s : rows.sessions) {
    if (!s.deleting || deleted_agents.count(s.agent_id) > 0)
      continue;
    if (auto err = remove_via_trash(paths.session_dir(s.agent_id, s.session_id),
                                    paths.sessions_dir(s.agent_id)))
      return err;
    deleted_sessions.insert({s.agent_id, s.session_id});
    r.changes.delete_sessions.push_back({s.agent_id, s.session_id});
    r.changes.audit.push_back(event("session.delete", s.agent_id, s.session_id,
                                    {{"origin", "recovery"}}));
    finished.emplace_back(session_key(s.agent_id, s.session_id));
  }

  // A fork journal (written by releases before forks kept their record in
  // the baseline's intent) goes with its session row in one commit, so one
  // left means the fork never completed: its half-made session goes.
  auto& aborted_forks = sum.aborted_forks;
  auto& recovered_forks = sum.recovered_forks;
  std::set<std::pair<std::string, std::string>> with_row;
  for (const auto& s : rows.sessions)
    with_row.insert({s.agent_id, s.session_id});
  for (const auto& j : rows.journals) {
    if (j.op != "fork")
      continue;
    if (deleted_agents.count(j.agent_id) == 0) {
      auto dir = paths.session_dir(j.agent_id, j.session_id);
      if (os::kind_of(dir) != os::entry_kind::missing)
        if (auto err = remove_via_trash(dir, paths.sessions_dir(j.agent_id)))
          return err;
    }
    deleted_sessions.insert({j.agent_id, j.session_id});
    r.changes.delete_journals.push_back({j.agent_id, j.session_id});
    r.changes.audit.push_back(event("session.fork.aborted", j.agent_id,
                                    j.session_id, {{"origin", "recovery"}}));
    aborted_forks.emplace_back(session_key(j.agent_id, j.session_id));
    log::warn("reconcile", "fork into " +
                               session_key(j.agent_id, j.session_id) +
                               " did not complete; removed");
  }
  std::map<std::pair<std::string, std::string>, const journal_row*> journals;
  for (const auto& j : rows.journals)
    if (j.op != "fork")
      journals[{j.agent_id, j.session_id}] = &j;
  std::map<std::pair<std::string, std::string>, swap_recovery> swaps;

  // What the disk holds, after interrupted swaps have put current/ back.
  std::map<std::string, std::set<std::string>> on_disk;
  auto agent_names = os::list_dir(paths.agents_dir());
  if (!agent_names)
    return agent_names.error();
  for (const auto& a : *agent_names) {
    if (!is_valid_id(a) || deleted_agents.count(a) > 0)
      continue;
    if (os::kind_of(paths.agent_dir(a)) != os::entry_kind::directory ||
        os::kind_of(paths.sessions_dir(a)) != os::entry_kind::directory)
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
      {
        auto fork = recover_fork(paths, a, s, with_row.count({a, s}) > 0);
        if (!fork)
          return fork.error();
        if (*fork == fork_leftover::aborted) {
          r.changes.audit.push_back(
              event("session.fork.aborted", a, s, {{"origin", "recovery"}}));
          aborted_forks.emplace_back(session_key(a, s));
          log::warn("reconcile", "fork into " + session_key(a, s) +
                                     " did not complete; removed");
          continue;
        }
        if (*fork == fork_leftover::completed) {
          r.changes.audit.push_back(
              event("session.fork.recovered", a, s, {{"origin", "recovery"}}));
          recovered_forks.emplace_back(session_key(a, s));
        }
      }
      auto j = journals.find({a, s});
      auto swap =
          recover_swap(paths, a, s, j == journals.end() ? nullptr : j->second);
      if (!swap)
        return swap.error();
      swaps[{a, s}] = *swap;
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
      log::warn("reconcile",
                "agent " + a.agent_id + " has no workspace on disk; forgotten");
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
      log::warn("reconcile", "session " +
                                 session_key(s.agent_id, s.session_id) +
                                 " has no workspace on disk; forgotten");
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
      session_row row{a, s, now, false, caf::none, caf::none};
      r.changes.put_sessions.push_back(row);
      r.changes.audit.push_back(event("session.adopt", a, s, {}));
      r.sessions.push_back(row);
      adopted_sessions.emplace_back(session_key(a, s));
    }
  }
  // Journals, orphans and checkpoints of every live session.
  std::map<std::pair<std::string, std::string>, std::vector<checkpoint_row>>
      checkpoints;
  for (const auto& c : rows.checkpoints)
    checkpoints[{c.agent_id, c.session_id}].push_back(c);
  for (auto& session : r.sessions) {
    std::pair<std::string, std::string> key{session.agent_id,
                                            session.session_id};
    auto j = journals.find(key);
    if (auto err = recover_session(paths, session, std::move(checkpoints[key]),
                                   j == journals.end() ? nullptr : j->second,
                                   swaps[key], r.changes, r.checkpoints,
                                   r.settled_intents, sum.recovered_sessions))
      return err;
  }
  sum.purged_trash = static_cast<int64_t>(purged);
  return r;
}

} // namespace allox::store
