// SPDX-License-Identifier: Apache-2.0
// The rollback facet of the SESSION actor: session.rollback and
// session.rollback_after_runtime_reset, and the purge of the trees they
// replace.
#include "actors/session/handlers.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "guest/os/fs.hpp"
#include "guest/store/create_intent.hpp"
#include "guest/store/layout.hpp"
#include "guest/store/workspace_ops.hpp"
#include "messages/checkpoint_params.hpp"
#include "messages/ids.hpp"

#include <memory>
#include <string>
#include <vector>

namespace allox::session_facets {

// -- session.rollback ---------------------------------------------------------

namespace {

/// One rollback in flight: the prototype's journaled swap (reference 5.4),
/// with one durable journal commit instead of one per phase:
///   journal (phase `preparing`: target, restore and discard names)
///   -> snapshot the checkpoint as .restore-<t>, scrub its sockets and
///      FIFOs (before it goes live), rename current/ to .discard-<t>,
///      rename .restore-<t> to current/, fsync the directory
///   -> head, audit and journal removal in one transaction (the commit),
///   the reply, and the deletion of .discard-<t> in the background.
/// Start-up recovery decides from what is on disk (guest/store/reconcile):
/// the rollback happened if the restored tree is current/, and otherwise it
/// is undone, also when a crash fell between the two renames (the phases
/// `prepared`/`old_moved`, which would roll that case forward, are only
/// found in journals imported from the prototype).
struct rollback_run {
  self_ptr self;
  caf::typed_response_promise<rollback_result> rp;
  params::rollback req;
  std::string target;
  journal_row journal;
  std::shared_ptr<fault_set> faults;
  std::vector<std::string> removed;
  /// Runs killed before the rollback (none unless kill_processes).
  caf::optional<std::vector<std::string>> terminated;
  /// The head the replaced tree grew from.
  caf::optional<std::string> replaced_head;
  /// What the runs changed in the replaced tree (its checkpoint's write
  /// set when keep_pre_rollback keeps it).
  write_interval replaced_writes;
};

using run_ptr = std::shared_ptr<rollback_run>;

} // namespace

static void rollback_fail(const run_ptr& run, caf::error err) {
  mutation_failed(run->self, run->rp, std::move(err));
}

/// Undoes the journal after a step failed with nothing left on disk.
static void rollback_abort(const run_ptr& run, caf::error err) {
  metadata_write undo;
  undo.delete_journals.push_back(ref(run->self));
  commit(
      run->self, std::move(undo), [run, err]() { rollback_fail(run, err); },
      [run](caf::error jerr) {
        fence(run->self, jerr);
        rollback_fail(run, jerr);
      });
}

/// Deletes the replaced trees. The ioctl returns before Btrfs reclaims the
/// space (its cleaner does that later). A crash first leaves orphaned
/// .discard- entries that start-up removes.
void purge_discards(self_ptr self) {
  auto& st = self->state;
  if (st.discards.empty())
    return;
  auto names = std::move(st.discards);
  st.discards.clear();
  auto paths = st.init.paths;
  auto a = st.agent_id();
  auto s = st.session_id();
  auto faults = std::make_shared<fault_set>(st.faults.take("purge"));
  run_blocking<step_done>(
      self,
      [paths, a, s, names, faults]() -> expected<step_done> {
        faults->trigger("purge.before_discard");
        for (const auto& name : names)
          if (auto err = store::remove_in_session(paths, a, s, name))
            log::warn("session",
                      "cannot delete " + name + ": " + message_of(err));
        faults->trigger("purge.after_discard");
        return step_done{};
      })
      .then([](step_done&) {}, [](caf::error&) {});
}

/// After the reply: the replaced tree waits for an idle moment. With the
/// store's quotas on, a few at most: every tree sharing the workspace's
/// extents adds to what Btrfs accounts at each snapshot (measured: a
/// checkpoint took 2x as long with 40 waiting, bench/store_quotas.py).
static void rollback_discard(const run_ptr& run) {
  auto self = run->self;
  auto& st = self->state;
  st.discards.push_back(run->journal.discard_name);
  const auto* cfg = st.runs.config.get();
  if (cfg && cfg->store_quotas && st.discards.size() >= max_quota_discards)
    purge_discards(self);
  else
    arm_idle_work(self);
}

/// Ends the mutation and answers; `kept` says what keep_pre_rollback
/// made of the replaced tree (the checkpoint's id or the error), if asked.
static void rollback_reply(const run_ptr& run,
                           caf::optional<expected<std::string>> kept = {}) {
  auto self = run->self;
  auto& st = self->state;
  // After a runtime reset the session stays fenced by the reset token
  // until runtime.complete_reset.
  end_mutation(self);
  rollback_result r;
  r.agent_id = st.agent_id();
  r.session_id = st.session_id();
  r.checkpoint_id = run->target;
  r.relative_workspace =
      store::layout::rel_current(st.agent_id(), st.session_id());
  r.removed_runtime_entries = run->removed;
  r.terminated_process_runs = run->terminated;
  if (kept) {
    r.keep_asked = true;
    if (*kept)
      r.pre_rollback_checkpoint_id = **kept;
    else
      r.pre_rollback_error = message_of(kept->error());
  }
  run->rp.deliver(std::move(r));
  rollback_discard(run);
}

/// keep_pre_rollback: the tree the rollback replaced becomes a checkpoint
/// (a read-only snapshot of .discard-<t>: no data copied) on a branch
/// from the head it grew from; the head stays at the rollback's target.
/// It takes checkpoint.create's crash story (intent record, then the
/// snapshot, then the row), and recovery never moves the head to a
/// pre-rollback checkpoint. A failure here does not undo the rollback,
/// which is committed: the reply says why nothing was kept.
static void keep_replaced_tree(const run_ptr& run) {
  auto self = run->self;
  auto& st = self->state;
  checkpoint_row row;
  row.agent_id = st.agent_id();
  row.session_id = st.session_id();
  row.checkpoint_id = "pre-rollback-" + random_hex_token().substr(0, 12);
  row.created_at_ns = os::now_ns();
  row.origin = "pre-rollback";
  row.message = "before rollback to " + run->target;
  json::object metadata{{"auto", true},
                        {"event", "rollback"},
                        {"rollback_to", run->target},
                        {"timestamp", iso_now()}};
  metadata["replaced_head"] = run->replaced_head
                                  ? json::value(*run->replaced_head)
                                  : json::value(nullptr);
  row.metadata = json::serialize(metadata);
  row.parent_id = run->replaced_head;
  auto paths = st.init.paths;
  auto discard = run->journal.discard_name;
  auto faults = run->faults;
  mutation_step<int64_t>(
      self,
      [paths, row, discard, faults]() -> expected<int64_t> {
        if (auto err = store::check_new_checkpoint(
                paths, row.agent_id, row.session_id, row.checkpoint_id))
          return err;
        if (auto err = store::write_create_intent(paths, row))
          return err;
        faults->trigger("rollback.keep.before_snapshot");
        auto gen = store::snapshot_entry(paths, row.agent_id, row.session_id,
                                         discard, row.checkpoint_id);
        if (!gen) {
          store::clear_create_intent(paths, row.agent_id, row.session_id,
                                     row.checkpoint_id);
          return gen.error();
        }
        faults->trigger("rollback.keep.after_snapshot");
        return *gen;
      },
      [run, row](int64_t& gen) mutable {
        auto owner = run->self;
        row.generation = gen;
        owner->state.dag.adopt(row);
        ++owner->state.checkpoints_created;
        settle_checkpoint(owner, row, run->faults, false,
                          adopt_writes(owner, row.checkpoint_id,
                                       std::move(run->replaced_writes)));
        rollback_reply(run, expected<std::string>{row.checkpoint_id});
        prune(owner, [](std::vector<std::string>) {});
      },
      [run](caf::error err) {
        log::warn("session",
                  run->self->state.key() +
                      ": the replaced tree is not kept: " + message_of(err));
        rollback_reply(run, expected<std::string>{std::move(err)});
      });
}

static void rollback_finish(const run_ptr& run) {
  auto self = run->self;
  auto& st = self->state;
  json::object fields{
      {"checkpoint_id", run->target},
      {"origin", run->req.origin},
      {"scrub_runtime", run->req.scrub_runtime},
      {"removed_runtime_entries", json::value_from(run->removed)}};
  metadata_write done;
  // Needs no fsync: if a power cut loses it, the journal (old_moved) is
  // still there and start-up commits the rollback from the disk, which the
  // fsync after the second rename made durable.
  done.durable = false;
  done.set_heads.push_back({st.agent_id(), st.session_id(), run->target});
  done.delete_journals.push_back(ref(self));
  done.audit.push_back(audit(self, "session.rollback", fields));
  mark_rollback(self, done);
  commit(
      self, std::move(done),
      [run]() {
        run->faults->trigger("rollback.after_commit");
        auto& state = run->self->state;
        state.dag.move_head(run->target);
        ++state.rollbacks;
        run->replaced_writes = restart_writes(run->self);
        if (policy_of(run->self).keep_pre_rollback)
          keep_replaced_tree(run);
        else
          rollback_reply(run);
      },
      [run](caf::error err) {
        // Swapped on disk; the journal says old_moved and start-up will
        // commit it. Until then nothing else may touch the session.
        fence(run->self, err);
        rollback_fail(run, err);
      });
}

/// The filesystem half of a rollback, on a worker thread: returns the
/// scrubbed runtime entries. A failure puts the old workspace back first.
static expected<std::vector<std::string>>
swap_in_checkpoint(const store::layout& paths, const std::string& a,
                   const std::string& s, const journal_row& j,
                   std::optional<uint64_t> share, fault_set& faults) {
  faults.trigger("rollback.before_snapshot");
  if (auto err =
          store::make_restore(paths, a, s, j.checkpoint_id, j.restore_name))
    return err;
  std::vector<std::string> removed;
  if (j.scrub_runtime) {
    auto entries =
        store::scrub_runtime(paths.session_dir(a, s) + "/" + j.restore_name);
    if (!entries) {
      store::remove_in_session(paths, a, s, j.restore_name);
      return entries.error();
    }
    removed = std::move(*entries);
  }
  // The restored tree is a new subvolume: it takes the session's disk
  // share before it goes live (a crash before the renames loses nothing,
  // and the actor's next start checks the limit again). Under simple
  // quotas it joined the session's group, whose limit this sets again.
  if (share)
    if (auto err = os::limit_share(
            paths.session_dir(a, s) + "/" + j.restore_name, share)) {
      store::remove_in_session(paths, a, s, j.restore_name);
      return err;
    }
  faults.trigger("rollback.after_snapshot");
  faults.trigger("rollback.before_move_old");
  // No fsync: if a power cut loses this rename, recovery sees current/ and
  // the restore and aborts.
  if (auto err = store::rename_in_session(paths, a, s, "current",
                                          j.discard_name, false)) {
    store::remove_in_session(paths, a, s, j.restore_name);
    return err;
  }
  faults.trigger("rollback.after_move_old");
  faults.trigger("rollback.before_move_new");
  // Durable before the commit: after it, nothing but the disk says which
  // tree is current.
  if (auto err =
          store::rename_in_session(paths, a, s, j.restore_name, "current")) {
    store::rename_in_session(paths, a, s, j.discard_name, "current");
    store::remove_in_session(paths, a, s, j.restore_name);
    return err;
  }
  faults.trigger("rollback.after_move_new");
  return removed;
}

/// Guards, target resolution and the swap; answers through `rp`.
/// `terminated` lists runs killed first (kill_processes), or is null.
static void begin_rollback(self_ptr self,
                           caf::typed_response_promise<rollback_result> rp,
                           params::rollback req, bool after_reset,
                           caf::optional<std::vector<std::string>> terminated) {
  auto& st = self->state;
  if (after_reset) {
    if (auto err = require_alive(self)) {
      rp.deliver(err);
      return;
    }
    if (st.reset_token.empty() || st.reset_token != req.reset_token) {
      rp.deliver(make_error(errc::invalid_argument,
                            "invalid runtime reset token for session"));
      return;
    }
    if (st.phase == session_phase::mutating) {
      rp.deliver(conflict("session mutation already in progress: " + st.key()));
      return;
    }
  } else if (auto err = require_mutable(self)) {
    {
      rp.deliver(err);
      return;
    }
  }
  auto target = req.checkpoint_id.empty() ? st.dag.ancestor(req.num_ancestors)
                                          : st.dag.resolve(req.checkpoint_id);
  if (!target) {
    rp.deliver(target.error());
    return;
  }
  begin_mutation(self, "session.rollback");
  auto run = std::make_shared<rollback_run>();
  run->self = self;
  run->rp = std::move(rp);
  run->req = std::move(req);
  run->target = *target;
  run->terminated = std::move(terminated);
  run->replaced_head = st.dag.head();
  run->faults = std::make_shared<fault_set>(st.faults.take("rollback"));
  auto token = random_hex_token();
  run->journal = {st.agent_id(),
                  st.session_id(),
                  "rollback",
                  "preparing",
                  run->target,
                  std::string{store::restore_prefix} + token,
                  std::string{store::discard_prefix} + token,
                  run->req.scrub_runtime,
                  run->req.origin,
                  ""};
  metadata_write w;
  w.put_journals.push_back(run->journal);
  commit(
      self, std::move(w),
      [run]() {
        auto owner = run->self;
        auto paths = owner->state.init.paths;
        auto a = owner->state.agent_id();
        auto s = owner->state.session_id();
        auto j = run->journal;
        auto faults = run->faults;
        auto share = disk_share(owner);
        mutation_step<std::vector<std::string>>(
            owner,
            [paths, a, s, j, share, faults]() {
              return swap_in_checkpoint(paths, a, s, j, share, *faults);
            },
            [run](std::vector<std::string>& removed) {
              run->removed = std::move(removed);
              rollback_finish(run);
            },
            [run](caf::error err) { rollback_abort(run, err); });
      },
      [run](caf::error err) { rollback_fail(run, err); });
}

caf::result<rollback_result> handle(self_ptr self,
                                    const cmd::session_rollback& c) {
  auto& st = self->state;
  // kill_processes defaults to --kill-session-processes-on-rollback (the
  // RPC actor decoded it so).
  auto req = c.req;
  auto after_reset = c.after_reset;
  if (req.kill_processes && !st.runs.config)
    return make_error(errc::unsupported,
                      "kill_processes requires process tracking");
  auto rp = self->make_response_promise<rollback_result>();
  if (!req.kill_processes) {
    begin_rollback(self, rp, std::move(req), after_reset, caf::none);
    return rp;
  }
  // Kill the session's process trees first; roll back once they ended.
  kill_runs(self, "rollback",
            [self, rp, req = std::move(req),
             after_reset](json::array killed) mutable {
              if (!self->state.runs.active.empty()) {
                rp.deliver(conflict("Session cgroup termination timed out; "
                                    "rollback remains fenced"));
                return;
              }
              std::vector<std::string> ids;
              for (const auto& id : killed)
                ids.emplace_back(id.as_string());
              begin_rollback(self, rp, std::move(req), after_reset,
                             std::move(ids));
            });
  return rp;
}

} // namespace allox::session_facets
