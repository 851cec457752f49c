// SPDX-License-Identifier: Apache-2.0
// Start-up recovery of the AGENTS actor (agents.load), before the daemon
// serves, one step per function:
//
//   load_catalog   METADATA: every row of the catalog
//   -> reconcile   a worker thread (blocking): the runs that outlived the
//                  daemon (to adopt) or that a crash interrupted (to
//                  fence), a store of the prototype (once), then the
//                  store against the catalog (guest/store/reconcile.cpp)
//   -> commit      METADATA: what recovery changed, in one transaction,
//                  with the store.initialize record
//   -> spawn       an AGENT for every agent (each spawns its sessions);
//                  the intent records the commit settled are removed; the
//                  summary is the reply
//
// A step that fails answers the caller with its error and spawns nothing:
// the daemon does not serve (daemon/main.cpp).
#include "actors/agents_detail.hpp"

#include "actors/blocking.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "guest/store/create_intent.hpp"
#include "guest/store/prototype_import.hpp"
#include "guest/store/reconcile.hpp"
#include "guest/store/run_recovery.hpp"

#include <caf/typed_response_promise.hpp>

#include <memory>
#include <set>
#include <utility>

namespace allox::agents_detail {

namespace {

/// What recovery carries from step to step.
struct recovery {
  caf::typed_response_promise<recovery_summary> rp;
  /// Written by the reconcile step on its worker thread; the actor reads
  /// it only once that step has answered.
  store::reconcile_result result;
};

using recovery_ptr = std::shared_ptr<recovery>;

/// Answers the caller with a step's error.
auto fail(recovery_ptr job) {
  return [job](caf::error& err) mutable {
    job->rp.deliver(err);
  };
}

/// Adds the prototype's rows to what start-up recovery sees, and to the
/// write that persists them.
void merge_import(catalog_snapshot& snap, const store::prototype_store& proto,
                  metadata_write& write) {
  std::set<std::pair<std::string, std::string>> known;
  for (const auto& s : snap.sessions)
    known.insert({s.agent_id, s.session_id});
  std::set<std::string> agents;
  for (const auto& a : snap.agents)
    agents.insert(a.agent_id);
  auto now = os::now_ns();
  for (auto a : proto.rows.agents) {
    if (!agents.insert(a.agent_id).second)
      continue;
    a.created_ns = now;
    snap.agents.push_back(a);
    write.put_agents.push_back(a);
  }
  for (auto s : proto.rows.sessions) {
    if (known.count({s.agent_id, s.session_id}) > 0)
      continue; // the catalog already knows better
    s.created_ns = now;
    snap.sessions.push_back(s);
    write.put_sessions.push_back(s);
    if (s.share_policy)
      write.set_share_policies.push_back(
          {s.agent_id, s.session_id, s.share_policy});
    for (const auto& c : proto.rows.checkpoints)
      if (c.agent_id == s.agent_id && c.session_id == s.session_id) {
        snap.checkpoints.push_back(c);
        write.put_checkpoints.push_back(c);
      }
  }
  for (const auto& j : proto.rows.journals)
    snap.journals.push_back(j);
  write.audit = proto.events;
}

/// The blocking part of recovery (a worker thread): runs first (what a
/// crash interrupted, and the rows of older stores' state.json files,
/// once), then a store written by the prototype (once), then the store
/// against the catalog. Its changes are one write: the imported rows, then
/// what recovery changed on disk and in them.
expected<store::reconcile_result> reconcile_store(const store::layout& paths,
                                                  catalog_snapshot& snap,
                                                  const exec_config* exec) {
  if (auto err = os::require_btrfs(paths.root))
    return err;
  metadata_write imported;
  store::recovered_runs runs;
  if (exec != nullptr) {
    auto found =
        store::recover_runs(snap, exec->audit_root, exec->boot_id, imported);
    if (!found)
      return found.error();
    runs = std::move(*found);
  }
  json::value import_summary;
  if (!snap.prototype_imported) {
    auto proto = store::read_prototype_store(paths);
    if (!proto)
      return proto.error();
    if (proto->found) {
      merge_import(snap, *proto, imported);
      import_summary = proto->summary;
      log::info("import", "adopting a store written by the prototype: " +
                              json::serialize(proto->summary));
    }
    imported.mark_prototype_imported = true;
  }
  auto r = store::reconcile(paths, snap);
  if (!r)
    return r.error();
  r->fenced_runs = std::move(runs.fenced);
  r->adopted_runs = std::move(runs.adopted);
  if (!import_summary.is_null()) {
    r->changes.audit.insert(r->changes.audit.begin(),
                            {os::now_ns(),
                             "store.import",
                             {},
                             {},
                             json::serialize(import_summary)});
    r->summary.imported = json::serialize(import_summary);
  }
  append(imported, std::move(r->changes));
  r->changes = std::move(imported);
  return r;
}

/// Removes intent records whose rows the start-up commit made durable.
void clear_intents(self_ptr self, std::vector<store::intent_ref> intents) {
  if (intents.empty())
    return;
  auto paths = self->state.paths;
  run_blocking<step_done>(self, [paths, intents]() -> expected<step_done> {
    if (auto err = store::clear_create_intents(paths, intents))
      log::warn("reconcile", message_of(err));
    return step_done{};
  }).then([](step_done&) {}, [](caf::error&) {});
}

/// Step 4: an AGENT for every agent, with its sessions, checkpoints and
/// fenced runs; the registry is ready and the summary answers.
void spawn(self_ptr self, recovery_ptr job) {
  auto& result = job->result;
  clear_intents(self, std::move(result.settled_intents));
  std::map<std::string, std::vector<session_row>> by_agent;
  std::map<std::string, std::vector<checkpoint_row>> checkpoints;
  for (auto& s : result.sessions)
    by_agent[s.agent_id].push_back(std::move(s));
  for (auto& c : result.checkpoints)
    checkpoints[c.agent_id].push_back(std::move(c));
  for (auto& a : result.agents) {
    auto& slot = self->state.agents[a.agent_id];
    slot.row = a;
    std::map<std::string, std::vector<std::string>> fenced;
    for (auto& [key, ids] : result.fenced_runs)
      if (key.first == a.agent_id)
        fenced[key.second] = ids;
    std::map<std::string, std::vector<run_row>> adopted;
    for (auto& [key, rows] : result.adopted_runs)
      if (key.first == a.agent_id)
        adopted[key.second] = std::move(rows);
    spawn_agent(self, slot, std::move(by_agent[a.agent_id]),
                std::move(checkpoints[a.agent_id]), std::move(fenced),
                std::move(adopted));
  }
  self->state.ready = true;
  auto summary = std::move(result.summary);
  summary.agents = static_cast<int64_t>(result.agents.size());
  summary.sessions = static_cast<int64_t>(result.sessions.size());
  summary.checkpoints = static_cast<int64_t>(result.checkpoints.size());
  job->rp.deliver(std::move(summary));
}

/// Step 3: what recovery changed, committed in one transaction.
void commit(self_ptr self, recovery_ptr job) {
  auto changes = std::move(job->result.changes);
  changes.audit.push_back({os::now_ns(), "store.initialize", {}, {}, "{}"});
  self->request(self->state.metadata, caf::infinite, atom::write_v,
                std::move(changes))
      .then([self, job](caf::ok_atom) { spawn(self, job); }, fail(job));
}

/// Step 2: the store reconciled with the rows, off the actor's thread.
void reconcile(self_ptr self, recovery_ptr job, catalog_snapshot snap) {
  auto paths = self->state.paths;
  auto exec = self->state.exec;
  run_blocking<step_done>(self,
                          [paths, exec, job, snap = std::move(snap)]() mutable
                          -> expected<step_done> {
                            auto r = reconcile_store(paths, snap, exec.get());
                            if (!r)
                              return r.error();
                            job->result = std::move(*r);
                            return step_done{};
                          })
      .then([self, job](step_done&) { commit(self, job); }, fail(job));
}

/// Step 1: every row of the catalog.
void load_catalog(self_ptr self, recovery_ptr job) {
  self->request(self->state.metadata, caf::infinite, atom::load_v)
      .then(
          [self, job](catalog_snapshot& snap) {
            reconcile(self, job, std::move(snap));
          },
          fail(job));
}

} // namespace

caf::result<recovery_summary> recover(self_ptr self) {
  auto job = std::make_shared<recovery>();
  job->rp = self->make_response_promise<recovery_summary>();
  load_catalog(self, job);
  return job->rp;
}

} // namespace allox::agents_detail
