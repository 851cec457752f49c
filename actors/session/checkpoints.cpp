// SPDX-License-Identifier: Apache-2.0
// The checkpoints facet of the SESSION actor: checkpoint.list, describe,
// create and delete (diff: diff.cpp; file.history: history.cpp), and the
// deferred work that follows mutations (syncing new checkpoint rows, retiring
// the lane, purging replaced trees).
#include "actors/session/handlers.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_diff.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "guest/store/catalog.hpp"
#include "guest/store/create_intent.hpp"
#include "guest/store/workspace_ops.hpp"
#include "messages/checkpoint_params.hpp"

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace allox::session_facets {

/// How long a live checkpoint waits for the runs to freeze: a process in
/// an uninterruptible sleep (a slow disk, a hung NFS read) delays it.
constexpr int freeze_timeout_ms = 2000;

/// A checkpoint slower than this logs where its time went.
constexpr std::chrono::milliseconds slow_checkpoint{100};

namespace {
/// When each stage of one checkpoint.create ended, for the slow log. The
/// worker's marks are read on the actor after the step's result arrived,
/// which orders them.
struct create_stages {
  using clock = std::chrono::steady_clock;
  clock::time_point begin = clock::now();
  int64_t queued_us = 0, intent_us = 0, frozen_us = 0, snapshot_us = 0;
  static void mark(int64_t& at, clock::time_point begin) {
    at = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() -
                                                               begin)
             .count();
  }
  /// "waiting for the lane 1 ms, intent 2 ms, ..." (each stage's own
  /// time; a stage not reached is left out).
  std::string text() const {
    int64_t last = 0;
    std::string out;
    auto stage = [&](const char* name, int64_t at) {
      if (at == 0)
        return;
      out += std::string{out.empty() ? "" : ", "} + name + " " +
             std::to_string((at - last) / 1000) + " ms";
      last = at;
    };
    stage("waiting for the lane", queued_us);
    stage("intent", intent_us);
    stage("freeze", frozen_us);
    stage("snapshot", snapshot_us);
    auto total = std::chrono::duration_cast<std::chrono::microseconds>(
                     clock::now() - begin)
                     .count();
    stage("catalog and reply", total);
    return out;
  }
};
} // namespace

// -- describe / list ----------------------------------------------------------

caf::result<checkpoint_page> handle(self_ptr self,
                                    const cmd::checkpoint_list& c) {
  if (auto err = require_alive(self))
    return err;
  auto& st = self->state;
  // Paging is optional: without `limit` the prototype's full list.
  checkpoint_page page;
  page.agent_id = st.agent_id();
  page.session_id = st.session_id();
  page.head = st.dag.head();
  // A page leaves out the list of every id, which would make each page as
  // large as the whole list (session.describe has it).
  if (c.limit == 0)
    page.checkpoint_ids = st.dag.present_ids();
  page.paged = c.limit > 0;
  page.checkpoints =
      st.dag.records(c.cursor, static_cast<size_t>(c.limit), &page.has_more);
  return page;
}

caf::result<checkpoint_view> handle(self_ptr self,
                                    const cmd::checkpoint_describe& c) {
  auto id = self->state.dag.resolve(c.checkpoint_id);
  if (!id)
    return id.error();
  return checkpoint_view{self->state.dag.record(*self->state.dag.find(*id)),
                         *id == self->state.dag.head()};
}

// -- checkpoint.create --------------------------------------------------------

/// The audit fields of checkpoint.create.
static json::object create_fields(const checkpoint_row& row) {
  json::object fields{{"checkpoint_id", row.checkpoint_id},
                      {"origin", row.origin},
                      {"pinned", row.pinned}};
  fields["message"] =
      row.message ? json::value(*row.message) : json::value(nullptr);
  fields["metadata"] =
      row.metadata ? json::parse(*row.metadata) : json::value(nullptr);
  return fields;
}

// -- deferred work ------------------------------------------------------------

/// Makes the rows of recent checkpoints durable, then removes their intent
/// records (until then, the records are their durable copy). The rows are
/// committed already, unsynced: one fdatasync of the catalog's log on a
/// worker makes them durable. METADATA goes on committing meanwhile; a
/// synced commit there would hold up every write queued behind it,
/// the turn states of this session's next turn.end among them.
static void sync_intents(self_ptr self) {
  auto& st = self->state;
  if (st.unsynced_intents.empty())
    return;
  std::vector<store::intent_ref> refs;
  for (auto& id : st.unsynced_intents)
    refs.push_back({st.agent_id(), st.session_id(), std::move(id)});
  st.unsynced_intents.clear();
  auto paths = st.init.paths;
  blocking<step_done>(
      self,
      [paths, refs]() -> expected<step_done> {
        if (auto err = store::catalog::sync_log(paths.database()))
          return err;
        if (auto err = store::clear_create_intents(paths, refs))
          return err;
        return step_done{};
      },
      [](step_done&) {},
      [self](caf::error err) {
        // Harmless: start-up makes rows of the records left and removes
        // those whose row it finds.
        log::warn("session",
                  self->state.key() +
                      ": cannot sync checkpoint rows: " + message_of(err));
      });
}

/// True while a fork's baseline is being made into this session or out of
/// its checkpoints, or failed to be (the session fences itself next).
static bool fork_baselines_pending(self_ptr self) {
  drop_ready(self->state.forks_out);
  const auto& mine = self->state.init.baseline_ready;
  if (!self->state.forks_out.empty())
    return true;
  if (!mine.valid())
    return false;
  // Failed counts as pending: the session fences itself on it next.
  return mine.wait_for(std::chrono::seconds{0}) != std::future_status::ready ||
         mine.get();
}

/// Runs deferred work once the session has been idle for idle_delay,
/// otherwise looks again later.
void idle_work(self_ptr self) {
  auto& st = self->state;
  st.idle_armed = false;
  if (st.discards.empty() && st.unsynced_intents.empty() && !*st.lane &&
      !*st.read_lane)
    return;
  if (st.phase == session_phase::fenced) {
    // Nothing may touch the store until start-up recovery, which also
    // finds the discards and the intent records.
    retire_lane(*st.lane);
    retire_lane(*st.read_lane);
    return;
  }
  // A fork's baseline still being made, into this session or out of its
  // checkpoints: the lane keeps its order (the baseline's step, or the
  // step waiting for it, is queued on it) and the intent record its
  // durability until the baseline exists.
  auto idle = std::chrono::steady_clock::now() - st.last_mutation;
  if (st.phase != session_phase::idle || idle < idle_delay ||
      fork_baselines_pending(self)) {
    st.idle_armed = true;
    self->delayed_send(self, idle_delay, atom::purge_v);
    return;
  }
  retire_lane(*st.lane);
  retire_lane(*st.read_lane);
  sync_intents(self);
  purge_discards(self);
}

/// Notes a mutation and makes sure deferred work runs after it.
void arm_idle_work(self_ptr self) {
  auto& st = self->state;
  st.last_mutation = std::chrono::steady_clock::now();
  if (!st.idle_armed) {
    st.idle_armed = true;
    self->delayed_send(self, idle_delay, atom::purge_v);
  }
}

// The commit is not synced: the record stays the durable copy until
// sync_intents.
void settle_checkpoint(self_ptr self, const checkpoint_row& row,
                       std::shared_ptr<fault_set> faults, bool as_head,
                       caf::optional<write_set_row> writes,
                       std::function<void()> committed) {
  faults->trigger("checkpoint.create.before_row");
  metadata_write w;
  w.durable = false;
  w.put_checkpoints.push_back(row);
  if (writes)
    w.put_write_sets.push_back(std::move(*writes));
  if (as_head)
    w.set_heads.push_back({row.agent_id, row.session_id, row.checkpoint_id});
  w.audit.push_back(audit(self, "checkpoint.create", create_fields(row)));
  commit(
      self, std::move(w),
      [self, id = row.checkpoint_id, faults, committed]() {
        if (committed)
          committed();
        faults->trigger("checkpoint.create.after_row");
        auto& st = self->state;
        st.unsynced_intents.push_back(id);
        if (st.unsynced_intents.size() >= max_unsynced_intents)
          sync_intents(self);
        else
          arm_idle_work(self);
      },
      [self, committed](caf::error err) {
        // The record still describes the checkpoint: start-up recovery
        // writes the row. Until then the catalog lags the session.
        fence(self, err);
        if (committed)
          committed();
      });
}

// All or nothing, without a catalog commit before the reply: the intent
// record is written, then the snapshot is taken under its final name.
// Btrfs makes both durable in the snapshot's own transaction, so after a
// crash the checkpoint exists with its complete row (recovered from the
// record) or not at all (guest/store/create_intent.hpp). The row goes to
// the catalog after the reply, ahead of any later write of this session.
void create_checkpoint(self_ptr self, const params::checkpoint_create& req,
                       std::function<void(expected<checkpoint_row>)> answer) {
  if (auto err = require_checkpointable(self))
    return answer(err);
  auto& st = self->state;
  auto id = req.checkpoint_id.empty() ? "cp-" + std::to_string(os::now_ns())
                                      : req.checkpoint_id;
  if (st.dag.find(id) != nullptr)
    return answer(
        make_error(errc::already_exists, "checkpoint already exists: " + id));
  checkpoint_row row;
  row.agent_id = st.agent_id();
  row.session_id = st.session_id();
  row.checkpoint_id = id;
  row.created_at_ns = os::now_ns();
  row.origin = req.origin;
  row.message = req.message;
  row.pinned = req.pinned;
  row.metadata = req.metadata;
  row.parent_id = st.dag.head();
  auto faults =
      std::make_shared<fault_set>(st.faults.take("checkpoint.create"));
  begin_mutation(self, "checkpoint.create");
  auto paths = st.init.paths;
  // A live session's runs are frozen for the snapshot alone: one instant
  // of their writes, and they go on unchanged after the thaw.
  std::string frozen;
  // A paused session's group is held frozen already (pause.cpp).
  if (!st.runs.active.empty() && st.runs.config && st.frozen_group.empty())
    frozen =
        st.runs.config->cgroups.session_group(row.agent_id, row.session_id);
  if (!frozen.empty())
    ++st.live_checkpoints;
  auto cut = begin_write_cut(self);
  auto stages = std::make_shared<create_stages>();
  auto timed_answer = [self, answer = std::move(answer),
                       stages](expected<checkpoint_row> r) mutable {
    if (create_stages::clock::now() - stages->begin >= slow_checkpoint)
      log::warn("session", self->state.key() +
                               ": slow checkpoint.create: " + stages->text());
    answer(std::move(r));
  };
  mutation_step<int64_t>(
      self,
      [paths, row, faults, frozen, stages]() -> expected<int64_t> {
        create_stages::mark(stages->queued_us, stages->begin);
        faults->trigger("checkpoint.create.before_intent");
        // Before the record: a name taken on disk keeps its own record.
        if (auto err = store::check_new_checkpoint(
                paths, row.agent_id, row.session_id, row.checkpoint_id))
          return err;
        if (auto err = store::write_create_intent(paths, row))
          return err;
        create_stages::mark(stages->intent_us, stages->begin);
        faults->trigger("checkpoint.create.before_snapshot");
        std::optional<os::frozen_group> hold;
        if (!frozen.empty()) {
          auto f = os::frozen_group::freeze(frozen, freeze_timeout_ms);
          if (!f) {
            store::clear_create_intent(paths, row.agent_id, row.session_id,
                                       row.checkpoint_id);
            return f.error();
          }
          hold.emplace(std::move(*f));
          create_stages::mark(stages->frozen_us, stages->begin);
        }
        auto gen = store::snapshot_current(paths, row.agent_id, row.session_id,
                                           row.checkpoint_id);
        create_stages::mark(stages->snapshot_us, stages->begin);
        hold.reset(); // thaw before anything else
        if (!gen) {
          store::clear_create_intent(paths, row.agent_id, row.session_id,
                                     row.checkpoint_id);
          return gen.error();
        }
        faults->trigger("checkpoint.create.after_snapshot");
        return *gen;
      },
      [self, answer = timed_answer, row, faults, cut](int64_t& gen) mutable {
        auto done = row;
        done.generation = gen;
        auto& state = self->state;
        state.dag.add(done);
        auto writes = seal_writes(self, done.checkpoint_id, cut);
        ++state.checkpoints_created;
        end_mutation(self);
        // Who wrote what is in no snapshot: a checkpoint whose interval
        // names writers answers once that is in the catalog (committed,
        // unsynced: safe from a kill), so it never acknowledges an
        // attribution a crash could lose. An empty one answers at once
        // (lost, it reads not_recorded: never a wrong writer).
        const auto* sealed = state.writes.sealed(done.checkpoint_id);
        bool names = writes && sealed != nullptr &&
                     (!sealed->empty() || sealed->lost > 0);
        std::function<void()> committed;
        if (names)
          committed = [answer, done]() mutable {
            answer(done);
          };
        settle_checkpoint(self, done, faults, true, std::move(writes),
                          std::move(committed));
        if (!names)
          answer(std::move(done));
      },
      [self, answer = timed_answer](caf::error err) mutable {
        ++self->state.failures;
        end_mutation(self);
        answer(std::move(err));
      });
}

caf::result<checkpoint_created> handle(self_ptr self,
                                       const cmd::checkpoint_create& c) {
  auto rp = self->make_response_promise<checkpoint_created>();
  create_checkpoint(self, c.req, [rp](expected<checkpoint_row> r) mutable {
    if (r)
      rp.deliver(checkpoint_created{std::move(*r)});
    else
      rp.deliver(r.error());
  });
  return rp;
}

// -- checkpoint.delete --------------------------------------------------------

caf::result<checkpoint_deleted> handle(self_ptr self,
                                       const cmd::checkpoint_delete& c) {
  const auto& origin = c.origin;
  auto& st = self->state;
  // Unlike the prototype, a row marked missing can be deleted by its id.
  std::string id;
  if (auto* exact = st.dag.find(c.checkpoint_id); exact != nullptr) {
    id = exact->checkpoint_id;
  } else {
    auto resolved = st.dag.resolve(c.checkpoint_id);
    if (!resolved)
      return resolved.error();
    id = *resolved;
  }
  if (st.dag.find(id)->pinned && !c.force)
    return conflict("checkpoint is pinned; use force to delete: " + id);
  // current/ is not touched: the session's live runs may go on.
  if (auto err = require_checkpointable(self))
    return err;
  begin_mutation(self, "checkpoint.delete");
  auto rp = self->make_response_promise<checkpoint_deleted>();
  auto faults =
      std::make_shared<fault_set>(st.faults.take("checkpoint.delete"));
  auto fail = [self, rp](caf::error err) mutable {
    mutation_failed(self, rp, std::move(err));
  };
  // The journal lets start-up finish a deletion whose snapshot is gone but
  // whose row is not (re-parenting and the head move happen there too).
  metadata_write w;
  w.put_journals.push_back({st.agent_id(), st.session_id(), "checkpoint.delete",
                            "preparing", id, "", "", false, origin, ""});
  commit(
      self, std::move(w),
      [self, rp, id, origin, faults, fail]() mutable {
        auto paths = self->state.init.paths;
        auto a = self->state.agent_id();
        auto s = self->state.session_id();
        mutation_step<step_done>(
            self,
            [paths, a, s, id, faults]() -> expected<step_done> {
              faults->trigger("checkpoint.delete.before_delete");
              // A record not yet removed must not outlive its snapshot.
              if (auto err = store::clear_create_intent(paths, a, s, id))
                return err;
              if (auto err = store::delete_checkpoint(paths, a, s, id))
                return err;
              faults->trigger("checkpoint.delete.after_delete");
              return step_done{};
            },
            [self, rp, id, origin](step_done&) mutable {
              auto& state = self->state;
              auto dag = state.dag;
              auto* row = dag.find(id);
              auto removed = *row;
              auto reparented = dag.remove(id);
              std::vector<std::string> children;
              for (const auto& r : reparented)
                children.push_back(r.checkpoint_id);
              state.writes.drop(id, children);
              metadata_write done;
              done.put_write_sets = write_set_rows(self, children);
              done.delete_checkpoints.push_back(removed);
              for (auto& r : reparented)
                done.put_checkpoints.push_back(r);
              done.set_heads.push_back(
                  {state.agent_id(), state.session_id(), dag.head()});
              done.delete_journals.push_back(ref(self));
              done.audit.push_back(
                  audit(self, "checkpoint.delete",
                        {{"checkpoint_id", id}, {"origin", origin}}));
              commit(
                  self, std::move(done),
                  [self, rp, id, dag]() mutable {
                    self->state.dag = std::move(dag);
                    end_mutation(self);
                    rp.deliver(checkpoint_deleted{
                        self->state.agent_id(), self->state.session_id(), id});
                  },
                  [self, rp](caf::error err) mutable {
                    fence(self, err);
                    rp.deliver(err);
                  });
            },
            [self, fail](caf::error err) mutable {
              metadata_write undo;
              undo.delete_journals.push_back(ref(self));
              commit(
                  self, std::move(undo), [fail, err]() mutable { fail(err); },
                  [self, fail](caf::error jerr) mutable {
                    fence(self, jerr);
                    fail(jerr);
                  });
            });
      },
      fail);
  return rp;
}

// -- session.fork (the source's part) -----------------------------------------

// A checkpoint is read-only and never changes, but checkpoint.delete could
// remove it: the snapshots are steps on this session's lane, so they come
// wholly before or after a deletion's (which then fails them cleanly). The
// new current/ is made and answered first; the baseline is the lane's very
// next step (queued with the first, so no deletion comes between), made
// once the agent has answered the fork and told to the new session
// through `baseline_made`.
caf::result<fork_current_made> handle(self_ptr self,
                                      const cmd::session_fork_into& c) {
  if (auto err = require_alive(self))
    return err;
  auto id = self->state.dag.resolve(c.checkpoint_id);
  if (!id)
    return id.error();
  const auto& paths = self->state.init.paths;
  auto source =
      paths.checkpoint(self->state.agent_id(), self->state.session_id(), *id);
  const auto& row = c.baseline;
  auto dir = paths.session_dir(row.agent_id, row.session_id);
  auto rp = self->make_response_promise<fork_current_made>();
  auto faults =
      std::make_shared<fault_set>(self->state.faults.take("session.fork"));
  // Written by the first step, read by the second (one lane thread).
  auto current_made = std::make_shared<bool>(false);
  mutation_step<fork_current_made>(
      self,
      [paths, row, source, dir, id = *id, faults,
       current_made]() -> expected<fork_current_made> {
        if (auto err = store::prepare_fork(paths, row))
          return err;
        faults->trigger("session.fork.before_snapshots");
        if (auto err = store::make_fork_current(source, dir))
          return err;
        *current_made = true;
        return fork_current_made{id};
      },
      [rp](fork_current_made& v) mutable { rp.deliver(std::move(v)); },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  if (!c.baseline_made)
    return rp;
  self->state.forks_out.push_back(c.baseline_made->ready());
  auto baseline =
      paths.checkpoint(row.agent_id, row.session_id, row.checkpoint_id);
  mutation_step<step_done>(
      self,
      [source, baseline, dir, answered = c.answered, made = c.baseline_made,
       faults, current_made]() -> expected<step_done> {
        if (!*current_made) {
          made->tell(make_error(errc::internal, "the fork was not made"));
          return step_done{};
        }
        // The fork's catalog write and reply first: this commit would
        // hold up the catalog's writes to the same filesystem.
        if (answered.valid())
          if (auto err = answered.get()) {
            made->tell(err); // failed: its directory is being removed
            return step_done{};
          }
        faults->trigger("session.fork.before_baseline");
        auto err = os::create_snapshot(source, baseline, true);
        if (!err)
          store::settle_fork(dir);
        made->tell(err);
        if (err)
          return err;
        return step_done{};
      },
      [self](step_done&) { drop_ready(self->state.forks_out); },
      [self, baseline](caf::error err) {
        // The new session fences itself on this; start-up recovery takes
        // the baseline from the checkpoint.
        log::error("session", self->state.key() + ": fork baseline " +
                                  baseline + " not made: " + message_of(err));
        drop_ready(self->state.forks_out);
      });
  return rp;
}

} // namespace allox::session_facets
