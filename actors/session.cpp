#include "actors/session.hpp"

#include "actors/blocking.hpp"
#include "actors/dump.hpp"
#include "actors/failures.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_diff.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/fs.hpp"
#include "guest/sandbox/bwrap_args.hpp"
#include "guest/sandbox/spawn.hpp"
#include "guest/store/create_intent.hpp"
#include "guest/store/run_recovery.hpp"
#include "guest/store/workspace_ops.hpp"
#include "messages/checkpoint_params.hpp"
#include "messages/ids.hpp"
#include "messages/params.hpp"

#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>

namespace allox {

std::string session_state::key() const {
  return session_key(agent_id(), session_id());
}

json::object describe_session(const session_row& row,
                              const store::checkpoint_dag& dag) {
  const auto& a = row.agent_id;
  const auto& s = row.session_id;
  json::object o;
  o["agent_id"] = a;
  o["session_id"] = s;
  o["workspace_level"] = "session";
  o["relative_agent_workspace"] = store::layout::rel_agent_workspace(a);
  o["relative_agent_shared"] = store::layout::rel_agent_shared(a);
  o["relative_session_workspace"] = store::layout::rel_session(a, s);
  o["relative_workspace"] = store::layout::rel_current(a, s);
  o["checkpoint_ids"] = dag.present_ids();
  if (dag.head().empty())
    o["checkpoint_head"] = nullptr;
  else
    o["checkpoint_head"] = dag.head();
  return o;
}

namespace {

using self_ptr = session_actor::stateful_pointer<session_state>;
using promise = caf::typed_response_promise<json::value>;
using fail_fn = std::function<void(caf::error)>;

caf::error conflict(std::string msg) {
  return make_error(errc::conflict, std::move(msg));
}

audit_event audit(self_ptr self, const std::string& op, json::object fields) {
  return {os::now_ns(), op, self->state.agent_id(), self->state.session_id(),
          json::serialize(fields)};
}

session_ref ref(self_ptr self) {
  return {self->state.agent_id(), self->state.session_id()};
}

// -- guards
// ---------------------------------------------------------------------

caf::error require_alive(self_ptr self) {
  auto& st = self->state;
  if (st.phase == "retired" || st.phase == "deleting")
    return make_error(errc::not_found, "session does not exist: " + st.key());
  if (st.phase == "fenced")
    return conflict("session is fenced (" + st.fence_reason +
                    "); restart the daemon to recover: " + st.key());
  return caf::none;
}

/// The prototype's "mutating": a mutation runs or a reset fences.
bool mutating(self_ptr self) {
  return self->state.phase == "mutating" || !self->state.reset_token.empty();
}

/// Guard of checkpoint.create/delete and session.rollback.
caf::error require_mutable(self_ptr self) {
  if (auto err = require_alive(self))
    return err;
  auto& st = self->state;
  if (mutating(self))
    return conflict("session mutation already in progress: " + st.key());
  if (!st.leases.empty())
    return conflict("session has active executions: " + st.key());
  if (!st.background.empty())
    return conflict("session has persistent runtime executions: " + st.key() +
                    "; use runtime reset before rollback");
  return caf::none;
}

void begin_mutation(self_ptr self, std::string what) {
  self->state.phase = "mutating";
  self->state.mutation = std::move(what);
}

void end_mutation(self_ptr self) {
  if (self->state.phase == "mutating")
    self->state.phase = "idle";
  self->state.mutation.clear();
}

/// A mutation ended in `err`: counted, the session freed, the caller told.
void mutation_failed(self_ptr self, promise& rp, caf::error err) {
  ++self->state.failures;
  end_mutation(self);
  rp.deliver(std::move(err));
}

/// A catalog write failed: the store may be mid-operation, so nothing else
/// may touch the session until start-up recovery has run.
void fence(self_ptr self, const caf::error& err) {
  auto& st = self->state;
  st.phase = "fenced";
  st.fence_reason = "metadata write failed: " + message_of(err);
  st.mutation.clear();
  log::error("session", st.key() + " fenced: " + st.fence_reason);
}

// -- sequencing
// -----------------------------------------------------------------

/// Commits `w` durably, then runs `next`; a failed commit goes to `fail`.
template <class Next>
void commit(self_ptr self, metadata_write w, Next next, fail_fn fail) {
  self->request(self->state.init.metadata, caf::infinite, atom::write_v,
                std::move(w))
      .then([next](caf::ok_atom) mutable { next(); },
            [fail](caf::error& err) { fail(err); });
}

/// Runs a filesystem step on a worker thread, then `next(result)`.
template <class Job, class Next>
void blocking(self_ptr self, Job job, Next next, fail_fn fail) {
  run_blocking(self, std::move(job))
      .then([next](json::value& v) mutable { next(v); },
            [fail](caf::error& err) { fail(err); });
}

void arm_idle_work(self_ptr self);

/// Runs a step of a mutation on the session's lane: mutations run one at a
/// time, and a burst of them does not start a thread per step.
/// The lane is retired once the session has been idle (idle_work).
template <class Job, class Next>
void mutation_step(self_ptr self, Job job, Next next, fail_fn fail) {
  run_on_lane(self, *self->state.lane, std::move(job))
      .then(
          [self, next](json::value& v) mutable {
            arm_idle_work(self);
            next(v);
          },
          [self, fail](caf::error& err) {
            arm_idle_work(self);
            fail(err);
          });
}

/// Runs a read-only filesystem step on a worker thread and answers the
/// request with its result or error.
template <class Job>
caf::result<json::value> answer_blocking(self_ptr self, Job job) {
  auto rp = self->make_response_promise<json::value>();
  blocking(
      self, std::move(job),
      [rp](json::value& v) mutable { rp.deliver(std::move(v)); },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

// -- describe / list
// ------------------------------------------------------------

caf::result<json::value> handle_describe(self_ptr self) {
  if (self->state.phase == "retired")
    return make_error(errc::not_found,
                      "session does not exist: " + self->state.key());
  const auto& row = self->state.init.row;
  auto current = self->state.init.paths.current(row.agent_id, row.session_id);
  // One lstat: cheap, and catches a workspace replaced behind our back.
  switch (os::kind_of(current)) {
  case os::entry_kind::directory:
    break;
  case os::entry_kind::missing:
    if (self->state.phase == "mutating")
      break; // mid-rollback: current/ is being swapped
    return make_error(errc::not_found,
                      "session does not exist: " + self->state.key());
  default:
    return make_error(errc::invalid_argument,
                      "session workspace is not a managed directory: " +
                          current);
  }
  return json_reply(describe_session(row, self->state.dag));
}

caf::result<json::value> handle_checkpoint_list(self_ptr self,
                                                const json::object& p) {
  if (auto err = require_alive(self))
    return err;
  auto& st = self->state;
  // Paging is optional: without `limit` the prototype's full list.
  auto cursor = params::optional_string(p, "cursor");
  if (!cursor)
    return cursor.error();
  auto limit = params::optional_int(p, "limit", 0);
  if (!limit)
    return limit.error();
  if (*limit < 0 || *limit > 10000)
    return make_error(errc::invalid_argument, "limit must be 1..10000");
  json::object o;
  o["agent_id"] = st.agent_id();
  o["session_id"] = st.session_id();
  if (st.dag.head().empty())
    o["head"] = nullptr;
  else
    o["head"] = st.dag.head();
  // A page leaves out the list of every id, which would make each page as
  // large as the whole list (session.describe has it).
  if (*limit == 0)
    o["checkpoint_ids"] = st.dag.present_ids();
  bool more = false;
  auto records = st.dag.records(*cursor, static_cast<size_t>(*limit), &more);
  if (*limit > 0) {
    o["has_more"] = more;
    o["next_cursor"] = records.empty()
                           ? json::value(nullptr)
                           : records.back().as_object().at("checkpoint_id");
  }
  o["checkpoints"] = std::move(records);
  return json_reply(std::move(o));
}

caf::result<json::value> handle_checkpoint_describe(self_ptr self,
                                                    const json::object& p) {
  auto key = params::required_string(p, "checkpoint_id");
  if (!key)
    return key.error();
  auto id = self->state.dag.resolve(*key);
  if (!id)
    return id.error();
  auto rec = self->state.dag.record(*self->state.dag.find(*id));
  rec["agent_id"] = self->state.agent_id();
  rec["session_id"] = self->state.session_id();
  rec["is_head"] = *id == self->state.dag.head();
  return json_reply(std::move(rec));
}

// -- checkpoint.diff
// ------------------------------------------------------------

// Paths added, modified and deleted between two checkpoints, or between a
// checkpoint and current/. The common ancestor in the DAG gives the Btrfs
// generation from which both trees diverged, so only what changed since is
// read (guest/os/btrfs_diff.hpp). Paginated by path.
caf::result<json::value> handle_checkpoint_diff(self_ptr self,
                                                const json::object& p) {
  if (auto err = require_alive(self))
    return err;
  auto& st = self->state;
  auto from_key = params::required_string(p, "from");
  if (!from_key)
    return from_key.error();
  auto from = st.dag.resolve(*from_key);
  if (!from)
    return from.error();
  std::string to;
  if (params::has(p, "to")) {
    auto to_key = params::required_string(p, "to");
    if (!to_key)
      return to_key.error();
    auto resolved = st.dag.resolve(*to_key);
    if (!resolved)
      return resolved.error();
    to = *resolved;
  } else if (st.phase == "mutating") {
    return conflict("session mutation in progress: " + st.key());
  }
  auto cursor = params::optional_string(p, "cursor");
  if (!cursor)
    return cursor.error();
  auto limit = params::optional_int(p, "limit", 1000);
  if (!limit)
    return limit.error();
  if (*limit < 1 || *limit > 10000)
    return make_error(errc::invalid_argument, "limit must be 1..10000");
  // current/ descends from the head.
  auto ancestor =
      st.dag.common_ancestor(*from, to.empty() ? st.dag.head() : to);
  uint64_t base = 0;
  std::string base_dir; // to read the generation from when the row lacks it
  const auto& paths = st.init.paths;
  if (auto* row = st.dag.find(ancestor); row != nullptr && !row->missing) {
    base = static_cast<uint64_t>(row->generation);
    if (base == 0) // imported from the prototype
      base_dir = paths.checkpoint(st.agent_id(), st.session_id(), ancestor);
  }
  auto a = st.agent_id();
  auto s = st.session_id();
  auto from_dir = paths.checkpoint(a, s, *from);
  auto to_dir = to.empty() ? paths.current(a, s) : paths.checkpoint(a, s, to);
  json::object head{{"agent_id", a}, {"session_id", s}, {"from", *from}};
  head["to"] = to.empty() ? json::value(nullptr) : json::value(to);
  head["base_checkpoint"] =
      ancestor.empty() ? json::value(nullptr) : json::value(ancestor);
  return answer_blocking(
      self,
      [from_dir, to_dir, base, base_dir, cursor = *cursor, limit = *limit,
       head]() mutable -> expected<json::value> {
        if (!base_dir.empty())
          base = static_cast<uint64_t>(store::snapshot_generation(base_dir));
        os::diff_stats stats;
        auto changes = os::diff_trees(from_dir, to_dir, base, &stats);
        if (!changes)
          return changes.error();
        json::array page;
        json::object counts{{"added", 0}, {"modified", 0}, {"deleted", 0}};
        std::string next;
        bool more = false;
        for (const auto& c : *changes) {
          counts[c.change] = counts[c.change].as_int64() + 1;
          if (!cursor.empty() && c.path <= cursor)
            continue;
          if (static_cast<int64_t>(page.size()) == limit) {
            more = true;
            continue;
          }
          page.push_back(json::object{
              {"path", c.path}, {"change", c.change}, {"type", c.type}});
          next = c.path;
        }
        head["changes"] = std::move(page);
        head["counts"] = std::move(counts);
        head["next_cursor"] =
            next.empty() ? json::value(nullptr) : json::value(next);
        head["has_more"] = more;
        head["method"] = stats.method;
        head["stats"] = json::object{{"changed_inodes", stats.changed_inodes},
                                     {"compared_paths", stats.compared_paths},
                                     {"listed_dirs", stats.listed_dirs}};
        return json::value(std::move(head));
      });
}

// -- checkpoint.create
// ----------------------------------------------------------

/// The audit fields of checkpoint.create.
json::object create_fields(const checkpoint_row& row) {
  json::object fields{{"checkpoint_id", row.checkpoint_id},
                      {"origin", row.origin},
                      {"pinned", row.pinned}};
  fields["message"] =
      row.has_message ? json::value(row.message) : json::value(nullptr);
  fields["metadata"] =
      row.metadata.empty() ? json::value(nullptr) : json::parse(row.metadata);
  return fields;
}

// -- deferred work
// ---------------------------------------------------------------

void purge_discards(self_ptr self);

/// Makes the rows of recent checkpoints durable with one catalog fsync,
/// then removes their intent records (until then, the records are their
/// durable copy).
void sync_intents(self_ptr self) {
  auto& st = self->state;
  if (st.unsynced_intents.empty())
    return;
  std::vector<store::intent_ref> refs;
  for (auto& id : st.unsynced_intents)
    refs.push_back({st.agent_id(), st.session_id(), std::move(id)});
  st.unsynced_intents.clear();
  metadata_write w; // durable
  // Rewriting the current head gives the commit a page to sync.
  w.set_heads.push_back({st.agent_id(), st.session_id(), st.dag.head()});
  auto paths = st.init.paths;
  commit(
      self, std::move(w),
      [self, paths, refs]() {
        blocking(
            self,
            [paths, refs]() -> expected<json::value> {
              if (auto err = store::clear_create_intents(paths, refs))
                return err;
              return json::value();
            },
            [](json::value&) {},
            [](caf::error err) {
              // Harmless: start-up removes records whose row exists.
              log::warn("session", message_of(err));
            });
      },
      [self](caf::error err) {
        log::warn("session",
                  self->state.key() +
                      ": cannot sync checkpoint rows: " + message_of(err));
      });
}

/// Runs deferred work once the session has been idle for idle_delay,
/// otherwise looks again later.
void idle_work(self_ptr self) {
  auto& st = self->state;
  st.idle_armed = false;
  if (st.discards.empty() && st.unsynced_intents.empty() && !*st.lane)
    return;
  if (st.phase == "fenced") {
    // Nothing may touch the store until start-up recovery, which also
    // finds the discards and the intent records.
    retire_lane(*st.lane);
    return;
  }
  auto idle = std::chrono::steady_clock::now() - st.last_mutation;
  if (st.phase != "idle" || idle < idle_delay) {
    st.idle_armed = true;
    self->delayed_send(self, idle_delay, atom::purge_v);
    return;
  }
  retire_lane(*st.lane);
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

/// The reply to checkpoint.create.
json::value created_reply(const checkpoint_row& row) {
  json::object r{{"agent_id", row.agent_id},
                 {"session_id", row.session_id},
                 {"checkpoint_id", row.checkpoint_id}};
  r["parent_id"] =
      row.parent_id.empty() ? json::value(nullptr) : json::value(row.parent_id);
  r["metadata"] =
      row.metadata.empty() ? json::value(nullptr) : json::parse(row.metadata);
  return json::value(std::move(r));
}

/// Writes the row of a checkpoint whose snapshot (and intent record) is
/// durable. The commit is not synced: the record stays the durable copy
/// until sync_intents.
void settle_checkpoint(self_ptr self, const checkpoint_row& row,
                       std::shared_ptr<fault_set> faults) {
  faults->trigger("checkpoint.create.before_row");
  metadata_write w;
  w.durable = false;
  w.put_checkpoints.push_back(row);
  w.set_heads.push_back({row.agent_id, row.session_id, row.checkpoint_id});
  w.audit.push_back(audit(self, "checkpoint.create", create_fields(row)));
  commit(
      self, std::move(w),
      [self, id = row.checkpoint_id, faults]() {
        faults->trigger("checkpoint.create.after_row");
        auto& st = self->state;
        st.unsynced_intents.push_back(id);
        if (st.unsynced_intents.size() >= max_unsynced_intents)
          sync_intents(self);
        else
          arm_idle_work(self);
      },
      [self](caf::error err) {
        // The record still describes the checkpoint: start-up recovery
        // writes the row. Until then the catalog lags the session.
        fence(self, err);
      });
}

// All or nothing, without a catalog commit before the reply: the intent
// record is written, then the snapshot is taken under its final name.
// Btrfs makes both durable in the snapshot's own transaction, so after a
// crash the checkpoint exists with its complete row (recovered from the
// record) or not at all (guest/store/create_intent.hpp). The row goes to
// the catalog after the reply, ahead of any later write of this session.
caf::result<json::value> handle_checkpoint_create(self_ptr self,
                                                  const json::object& p) {
  auto req = params::decode_checkpoint_create(p);
  if (!req)
    return req.error();
  if (auto err = require_mutable(self))
    return err;
  auto& st = self->state;
  auto id = req->checkpoint_id.empty() ? "cp-" + std::to_string(os::now_ns())
                                       : req->checkpoint_id;
  if (st.dag.find(id) != nullptr)
    return make_error(errc::already_exists, "checkpoint already exists: " + id);
  checkpoint_row row;
  row.agent_id = st.agent_id();
  row.session_id = st.session_id();
  row.checkpoint_id = id;
  row.created_at_ns = os::now_ns();
  row.origin = req->origin;
  row.has_message = req->has_message;
  row.message = req->message;
  row.pinned = req->pinned;
  row.metadata = req->metadata;
  row.parent_id = st.dag.head();
  auto faults =
      std::make_shared<fault_set>(st.faults.take("checkpoint.create"));
  begin_mutation(self, "checkpoint.create");
  auto rp = self->make_response_promise<json::value>();
  auto paths = st.init.paths;
  mutation_step(
      self,
      [paths, row, faults]() -> expected<json::value> {
        faults->trigger("checkpoint.create.before_intent");
        // Before the record: a name taken on disk keeps its own record.
        if (auto err = store::check_new_checkpoint(
                paths, row.agent_id, row.session_id, row.checkpoint_id))
          return err;
        if (auto err = store::write_create_intent(paths, row))
          return err;
        faults->trigger("checkpoint.create.before_snapshot");
        auto gen = store::snapshot_current(paths, row.agent_id, row.session_id,
                                           row.checkpoint_id);
        if (!gen) {
          store::clear_create_intent(paths, row.agent_id, row.session_id,
                                     row.checkpoint_id);
          return gen.error();
        }
        faults->trigger("checkpoint.create.after_snapshot");
        return json::value(*gen);
      },
      [self, rp, row, faults](json::value& gen) mutable {
        auto done = row;
        done.generation = gen.as_int64();
        auto& state = self->state;
        state.dag.add(done);
        ++state.checkpoints_created;
        end_mutation(self);
        settle_checkpoint(self, done, faults);
        rp.deliver(created_reply(done));
      },
      [self, rp](caf::error err) mutable {
        mutation_failed(self, rp, std::move(err));
      });
  return rp;
}

// -- checkpoint.delete
// ----------------------------------------------------------

caf::result<json::value> handle_checkpoint_delete(self_ptr self,
                                                  const json::object& p) {
  auto key = params::required_string(p, "checkpoint_id");
  if (!key)
    return key.error();
  auto force = params::optional_bool(p, "force", false);
  if (!force)
    return force.error();
  auto origin = params::origin(p);
  auto& st = self->state;
  // Unlike the prototype, a row marked missing can be deleted by its id.
  std::string id;
  if (auto* exact = st.dag.find(*key); exact != nullptr) {
    id = exact->checkpoint_id;
  } else {
    auto resolved = st.dag.resolve(*key);
    if (!resolved)
      return resolved.error();
    id = *resolved;
  }
  if (st.dag.find(id)->pinned && !*force)
    return conflict("checkpoint is pinned; use force to delete: " + id);
  if (auto err = require_mutable(self))
    return err;
  begin_mutation(self, "checkpoint.delete");
  auto rp = self->make_response_promise<json::value>();
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
        mutation_step(
            self,
            [paths, a, s, id, faults]() -> expected<json::value> {
              faults->trigger("checkpoint.delete.before_delete");
              // A record not yet removed must not outlive its snapshot.
              if (auto err = store::clear_create_intent(paths, a, s, id))
                return err;
              if (auto err = store::delete_checkpoint(paths, a, s, id))
                return err;
              faults->trigger("checkpoint.delete.after_delete");
              return json::value();
            },
            [self, rp, id, origin](json::value&) mutable {
              auto& state = self->state;
              auto dag = state.dag;
              auto* row = dag.find(id);
              auto removed = *row;
              auto reparented = dag.remove(id);
              metadata_write done;
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
                    rp.deliver(json::value(
                        json::object{{"agent_id", self->state.agent_id()},
                                     {"session_id", self->state.session_id()},
                                     {"checkpoint_id", id},
                                     {"deleted", true}}));
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

// -- tracked execution
// -------------------------------------------------------------

caf::error no_execution() {
  return make_error(errc::unsupported,
                    "process tracking is not enabled on this daemon");
}

std::string run_dir(const exec_config& cfg, const std::string& id) {
  return cfg.audit_root + "/" + id;
}

/// Writes the next queued run row (temp file + rename) on a worker thread.
void save_next_run(self_ptr self) {
  auto& runs = self->state.runs;
  if (runs.unsaved.empty()) {
    runs.saving = false;
    return;
  }
  runs.saving = true;
  auto it = runs.unsaved.begin();
  auto dir = run_dir(*runs.config, it->first);
  auto [row, stamp] = std::move(it->second);
  runs.unsaved.erase(it);
  run_blocking(self,
               [dir, row = std::move(row), stamp = stamp,
                writer = runs.writer]() -> expected<json::value> {
                 if (auto err = writer->write(dir, row, stamp))
                   return err;
                 return json::value();
               })
      .then([self](json::value&) { save_next_run(self); },
            [self](caf::error& err) {
              log::warn("session", "run state not saved: " + message_of(err));
              save_next_run(self);
            });
}

/// Queues a run row for writing to its state.json.
void persist_run(self_ptr self, const json::object& row) {
  auto& runs = self->state.runs;
  runs.unsaved[std::string{row.at("run_id").as_string()}] = {
      row, runs.writer->stamp()};
  if (!runs.saving)
    save_next_run(self);
}

/// The thread of one run: opens its logs, starts bwrap inside the session
/// cgroup, waits for the whole tree and reports. Bubblewrap dies with the
/// thread that started it (--die-with-parent), so this detached actor's
/// thread lives exactly as long as the run.
void run_worker(caf::event_based_actor* self, session_actor session,
                std::string id, std::vector<std::string> argv,
                std::string group, std::string dir, std::string initial,
                std::vector<std::pair<std::string, std::string>> limits,
                std::string tree_root) {
  auto report = [&](int64_t code, bool empty, std::string error) {
    caf::anon_send(session, atom::finished_v, id, code, empty,
                   std::move(error));
  };
  self->quit();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return report(-1, true, "cannot create the run directory " + dir);
  // The record exists before anything runs: after a crash from here on,
  // start-up finds the run and fences its session.
  if (store::write_run_row(dir, json::parse(initial).as_object()))
    return report(-1, true, "cannot record the run in " + dir);
  os::unique_fd out{::open((dir + "/stdout.log").c_str(),
                           O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)};
  os::unique_fd err{::open((dir + "/stderr.log").c_str(),
                           O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)};
  if (!out || !err)
    return report(-1, true, "cannot open the run's logs");
  if (auto e = os::prepare_group(group))
    return report(-1, !os::populated(group), message_of(e));
  for (const auto& [file, value] : limits) {
    os::enable_controller(tree_root, group, file.substr(0, file.find('.')));
    if (auto e = os::write_control(group, file, value))
      return report(-1, true, "cannot set " + file + ": " + message_of(e));
  }
  auto gfd = os::open_group(group);
  if (!gfd)
    return report(-1, true, message_of(gfd.error()));
  auto child = sandbox::spawn_in_cgroup(gfd->get(), argv, out.get(), err.get());
  if (!child)
    return report(-1, !os::populated(group), message_of(child.error()));
  caf::anon_send(session, atom::started_v, id, int64_t{child->pid});
  auto code = sandbox::wait_child(*child);
  // Our init outlives every process of the run, so the group empties right
  // after bwrap; wait for the kernel to say so.
  bool empty = os::wait_empty(group, 10000);
  report(code, empty, "");
}

json::object new_run_row(self_ptr self, const std::string& id,
                         const std::string& group) {
  auto& st = self->state;
  auto& cfg = *st.runs.config;
  json::object row;
  row["run_id"] = id;
  row["agent_id"] = st.agent_id();
  row["session_id"] = st.session_id();
  row["backend"] = "disabled";
  row["isolation"] = "bubblewrap";
  row["boot_id"] = cfg.boot_id;
  row["state"] = "starting";
  row["created_ns"] = os::now_ns();
  row["event_count"] = 0;
  row["processes"] = json::object{};
  row["audit_directory"] = run_dir(cfg, id);
  row["trace_complete"] = false;
  row["cookie"] = 0;
  row["root_pid"] = nullptr;
  row["cgroup"] = group;
  row["root_exit_code"] = nullptr;
  row["stop_reason"] = nullptr;
  row["session_fenced"] = false;
  row["lifecycle_complete"] = false;
  row["finished_ns"] = nullptr;
  row["error"] = nullptr;
  row["provider_error"] = nullptr;
  return row;
}

/// The session's settings over the daemon's defaults.
json::object effective_settings(self_ptr self) {
  const auto& cfg = *self->state.runs.config;
  json::object limits;
  for (const auto& [k, v] : cfg.default_limits)
    limits[k] = v;
  std::string network = cfg.default_network;
  const auto& text = self->state.init.row.exec_settings;
  if (!text.empty()) {
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    if (!ec && v.is_object()) {
      if (auto* n = v.as_object().if_contains("network"); n && n->is_string())
        network = std::string{n->get_string()};
      if (auto* l = v.as_object().if_contains("limits"); l && l->is_object())
        for (const auto& kv : l->as_object())
          limits[kv.key()] = kv.value();
    }
  }
  return json::object{{"network", network}, {"limits", std::move(limits)}};
}

// Per-session execution settings: the network mode (inherit, or isolated:
// a network namespace with only loopback) and cgroup limits, which are
// refused as unsupported where the controller does not exist. They apply
// to the next run and persist with the session row.
caf::result<json::value> handle_configure(self_ptr self,
                                          const json::object& p) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  if (auto err = require_alive(self))
    return err;
  json::object settings;
  if (!st.init.row.exec_settings.empty()) {
    boost::system::error_code ec;
    auto v = json::parse(st.init.row.exec_settings, ec);
    if (!ec && v.is_object())
      settings = v.as_object();
  }
  auto reset = params::optional_bool(p, "reset", false);
  if (!reset)
    return reset.error();
  if (*reset)
    settings = {};
  if (auto* n = p.if_contains("network"); n != nullptr && !n->is_null()) {
    std::string mode = n->is_string() ? std::string{n->get_string()} : "";
    mode.erase(std::remove_if(mode.begin(), mode.end(), ::isspace), mode.end());
    std::transform(mode.begin(), mode.end(), mode.begin(), ::tolower);
    if (mode != "inherit" && mode != "isolated")
      return make_error(errc::invalid_argument,
                        "network must be inherit or isolated");
    settings["network"] = mode;
  }
  if (auto* l = p.if_contains("limits"); l != nullptr && !l->is_null()) {
    if (!l->is_object())
      return make_error(errc::invalid_argument, "limits must be an object");
    json::object limits;
    if (auto* old = settings.if_contains("limits"); old && old->is_object())
      limits = old->as_object();
    for (const auto& kv : l->as_object()) {
      std::string name{kv.key()};
      if (kv.value().is_null()) {
        limits.erase(name);
        continue;
      }
      std::string value;
      if (kv.value().is_string())
        value = std::string{kv.value().get_string()};
      else if (kv.value().is_int64() && kv.value().get_int64() > 0)
        value = std::to_string(kv.value().get_int64());
      if (auto err = check_limit(*st.runs.config, name, value))
        return err;
      limits[name] = value;
    }
    settings["limits"] = std::move(limits);
  }
  auto text = settings.empty() ? std::string{} : json::serialize(settings);
  auto rp = self->make_response_promise<json::value>();
  metadata_write w;
  w.set_exec_settings.push_back({st.agent_id(), st.session_id(), text});
  w.audit.push_back(
      audit(self, "session.configure",
            {{"origin", params::origin(p)}, {"settings", settings}}));
  commit(
      self, std::move(w),
      [self, rp, text]() mutable {
        self->state.init.row.exec_settings = text;
        auto r = effective_settings(self);
        r["agent_id"] = self->state.agent_id();
        r["session_id"] = self->state.session_id();
        rp.deliver(json::value(std::move(r)));
      },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::result<json::value> handle_process_start(self_ptr self,
                                              const json::object& p) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto req = decode_start(p);
  if (!req)
    return req.error();
  if (auto err = require_alive(self))
    return err;
  if (mutating(self))
    return conflict("session is being checkpointed or restored: " + st.key());
  if (!st.leases.empty())
    return conflict("session already has an active execution: " + st.key());
  const auto& cfg = *st.runs.config;
  auto id = random_hex_token();
  auto group = cfg.cgroups.session_group(st.agent_id(), st.session_id());
  st.leases["run:" + id] = os::now_ns();
  auto& run = st.runs.runs[id];
  run.row = new_run_row(self, id, group);
  auto settings = effective_settings(self);
  run.row["network_mode"] = settings.at("network");
  run.row["limits"] = settings.at("limits");
  std::vector<std::pair<std::string, std::string>> limits;
  for (const auto& kv : settings.at("limits").as_object())
    limits.emplace_back(std::string{kv.key()},
                        std::string{kv.value().as_string()});
  st.runs.active = id;
  auto rp = self->make_response_promise<json::value>();
  run.waiting_start.push_back(rp);
  sandbox::spec spec;
  spec.bwrap = cfg.bwrap_path;
  spec.init = cfg.init_path;
  spec.current = st.init.paths.current(st.agent_id(), st.session_id());
  spec.shared = st.init.paths.agent_shared(st.agent_id());
  spec.agent_id = st.agent_id();
  spec.session_id = st.session_id();
  spec.env = req->env;
  spec.argv = req->argv;
  spec.isolated_network = settings.at("network") == "isolated";
  self->spawn<caf::detached>(run_worker, caf::actor_cast<session_actor>(self),
                             id, sandbox::bwrap_argv(spec), group,
                             run_dir(cfg, id), json::serialize(run.row),
                             std::move(limits), cfg.cgroups.root());
  self->delayed_send(
      self,
      std::chrono::milliseconds(static_cast<int64_t>(req->timeout * 1000)),
      atom::timeout_v, id);
  return rp;
}

/// Kills the run's whole tree (cgroup.kill) with a stop reason, and calls
/// `then` once the run has ended.
void kill_run(self_ptr self, const std::string& id, const std::string& reason,
              std::function<void()> then) {
  auto& st = self->state;
  auto it = st.runs.runs.find(id);
  if (it == st.runs.runs.end() || !it->second.active) {
    if (then)
      then();
    return;
  }
  auto& row = it->second.row;
  if (row.at("stop_reason").is_null())
    row["stop_reason"] = reason;
  if (then)
    it->second.on_end.push_back(std::move(then));
  if (auto err = os::kill_group(std::string{row.at("cgroup").as_string()}))
    log::warn("session", st.key() + ": " + message_of(err));
}

void on_run_started(self_ptr self, const std::string& id, int64_t pid) {
  auto it = self->state.runs.runs.find(id);
  if (it == self->state.runs.runs.end())
    return;
  auto& run = it->second;
  run.row["state"] = "running";
  run.row["root_pid"] = pid;
  for (auto& rp : run.waiting_start)
    rp.deliver(json::value(run.row));
  run.waiting_start.clear();
  persist_run(self, run.row);
}

void on_run_finished(self_ptr self, const std::string& id, int64_t code,
                     bool empty, const std::string& error) {
  auto& st = self->state;
  auto it = st.runs.runs.find(id);
  if (it == st.runs.runs.end())
    return;
  auto& run = it->second;
  auto& row = run.row;
  if (code >= 0)
    row["root_exit_code"] = code;
  bool ok = empty && error.empty();
  if (!error.empty())
    row["error"] = error;
  row["state"] =
      !ok ? "failed"
          : (row.at("stop_reason").is_null() ? "completed" : "stopped");
  row["session_fenced"] = !empty;
  row["lifecycle_complete"] = ok;
  row["finished_ns"] = os::now_ns();
  run.active = false;
  if (st.runs.active == id)
    st.runs.active.clear();
  auto group = std::string{row.at("cgroup").as_string()};
  if (empty) {
    // The lease goes with the last process; a group that would not empty
    // keeps the session fenced.
    st.leases.erase("run:" + id);
    os::remove_group(group);
  }
  for (auto& rp : run.waiting_start)
    rp.deliver(error.empty()
                   ? json::value(row)
                   : json::value(row)); // the failed row tells what happened
  run.waiting_start.clear();
  for (auto& rp : run.waiting_end)
    rp.deliver(json::value(row));
  run.waiting_end.clear();
  auto callbacks = std::move(run.on_end);
  run.on_end.clear();
  persist_run(self, row);
  for (auto& f : callbacks)
    f();
}

void shutdown_runs(self_ptr self) {
  auto& st = self->state;
  if (!st.runs.config || st.runs.active.empty())
    return;
  auto& row = st.runs.runs[st.runs.active].row;
  auto group = std::string{row.at("cgroup").as_string()};
  row["stop_reason"] = "daemon_shutdown";
  os::kill_group(group);
  // Shutdown only: waiting here is the point (at most 10 s).
  bool empty = os::wait_empty(group, 10000);
  row["state"] = empty ? "stopped" : "failed";
  row["session_fenced"] = !empty;
  row["lifecycle_complete"] = empty;
  row["finished_ns"] = os::now_ns();
  // A save of this run may still be in flight on a worker thread.
  auto dir = run_dir(*st.runs.config, st.runs.active);
  if (auto err = st.runs.writer->write(dir, row, st.runs.writer->stamp()))
    log::warn("session", "run state not saved at shutdown: " + message_of(err));
  if (empty)
    os::remove_group(group);
}

caf::expected<std::string> run_id_param(const json::object& p) {
  return params::required_id(p, "run_id", "run");
}

/// Reads a finished run's state.json; checks it belongs to this session.
expected<json::object> load_run(const std::string& dir, const std::string& a,
                                const std::string& s) {
  auto row = store::read_run_row(dir);
  if (!row)
    return row;
  if (row->at("agent_id") != json::value(a) ||
      row->at("session_id") != json::value(s))
    return make_error(errc::invalid_argument,
                      "run does not belong to this Agent/Session");
  return row;
}

caf::result<json::value> handle_process_get(self_ptr self,
                                            const json::object& p) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto id = run_id_param(p);
  if (!id)
    return id.error();
  if (auto it = st.runs.runs.find(*id); it != st.runs.runs.end())
    return json_reply(it->second.row);
  auto dir = run_dir(*st.runs.config, *id);
  auto a = st.agent_id();
  auto s = st.session_id();
  return answer_blocking(self, [dir, a, s]() -> expected<json::value> {
    auto row = load_run(dir, a, s);
    if (!row)
      return row.error();
    return json::value(std::move(*row));
  });
}

caf::result<json::value> handle_process_list(self_ptr self) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto root = st.runs.config->audit_root;
  auto a = st.agent_id();
  auto s = st.session_id();
  // Live rows win over what is on disk.
  std::map<std::string, json::object> live;
  for (const auto& [id, run] : st.runs.runs)
    live[id] = run.row;
  return answer_blocking(self, [root, a, s, live]() -> expected<json::value> {
    std::vector<json::object> rows;
    if (auto names = os::list_dir(root))
      for (const auto& id : *names) {
        if (auto it = live.find(id); it != live.end()) {
          rows.push_back(it->second);
          continue;
        }
        if (auto row = load_run(root + "/" + id, a, s))
          rows.push_back(std::move(*row));
      }
    std::sort(rows.begin(), rows.end(), [](auto& x, auto& y) {
      return x.at("created_ns").as_int64() < y.at("created_ns").as_int64();
    });
    json::array out;
    for (auto& r : rows) {
      r.erase("processes");
      out.emplace_back(std::move(r));
    }
    return json::value(std::move(out));
  });
}

caf::result<json::value> handle_process_stop(self_ptr self,
                                             const json::object& p) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto id = run_id_param(p);
  if (!id)
    return id.error();
  auto it = st.runs.runs.find(*id);
  if (it == st.runs.runs.end())
    return make_error(errc::invalid_argument,
                      "cannot control a historical run");
  if (!it->second.active)
    return json_reply(it->second.row);
  auto rp = self->make_response_promise<json::value>();
  it->second.waiting_end.push_back(rp);
  kill_run(self, *id, "requested", {});
  return rp;
}

/// Keeps text JSON-safe: invalid UTF-8 bytes become U+FFFD.
std::string valid_utf8(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    auto c = static_cast<unsigned char>(in[i]);
    size_t len = c < 0x80         ? 1
                 : (c >> 5) == 6  ? 2
                 : (c >> 4) == 14 ? 3
                 : (c >> 3) == 30 ? 4
                                  : 0;
    bool ok = len > 0 && i + len <= in.size();
    for (size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(in[i + k]) >> 6) == 2;
    if (ok) {
      out.append(in, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

/// The state of a run this actor knows, or null (an earlier lifetime's).
json::value live_state(self_ptr self, const std::string& id) {
  auto& runs = self->state.runs.runs;
  auto it = runs.find(id);
  return it == runs.end() ? json::value(nullptr) : it->second.row.at("state");
}

/// Process events need the eBPF tracker: runs carry none yet.
caf::result<json::value> handle_process_events(self_ptr self,
                                               const json::object& p) {
  if (!self->state.runs.config)
    return no_execution();
  auto id = run_id_param(p);
  if (!id)
    return id.error();
  auto after = params::optional_int(p, "after", 0);
  auto limit = params::optional_int(p, "limit", 100);
  if (!after || !limit || *after < 0 || *limit < 1 || *limit > 1000)
    return make_error(errc::invalid_argument,
                      "after must be nonnegative; limit must be 1..1000");
  return json_reply(json::object{{"events", json::array{}},
                                 {"next_after", *after},
                                 {"state", live_state(self, *id)}});
}

caf::result<json::value> handle_process_output(self_ptr self,
                                               const json::object& p) {
  auto& st = self->state;
  if (!st.runs.config)
    return no_execution();
  auto id = run_id_param(p);
  if (!id)
    return id.error();
  auto stream = params::optional_string(p, "stream", "stdout");
  if (!stream)
    return stream.error();
  if (*stream != "stdout" && *stream != "stderr")
    return make_error(errc::invalid_argument,
                      "stream must be stdout or stderr");
  auto offset = params::optional_int(p, "offset", 0);
  if (!offset)
    return offset.error();
  auto limit = params::optional_int(p, "limit", 65536);
  if (!limit)
    return limit.error();
  if (*offset < 0 || *limit < 1 || *limit > (1 << 20))
    return make_error(errc::invalid_argument,
                      "offset must be nonnegative; limit must be 1..1048576");
  auto dir = run_dir(*st.runs.config, *id);
  auto a = st.agent_id();
  auto s = st.session_id();
  auto state = live_state(self, *id);
  return answer_blocking(
      self,
      [dir, a, s, id = *id, stream = *stream, offset = *offset, limit = *limit,
       state]() mutable -> expected<json::value> {
        if (state.is_null()) {
          auto row = load_run(dir, a, s);
          if (!row)
            return row.error();
          state = row->at("state");
        }
        std::ifstream in{dir + "/" + stream + ".log", std::ios::binary};
        std::string data;
        int64_t size = 0;
        if (in) {
          in.seekg(0, std::ios::end);
          size = static_cast<int64_t>(in.tellg());
          if (offset < size) {
            in.seekg(offset);
            data.resize(static_cast<size_t>(std::min(limit, size - offset)));
            in.read(data.data(), static_cast<std::streamsize>(data.size()));
            data.resize(static_cast<size_t>(in.gcount()));
          }
        }
        auto next = offset + static_cast<int64_t>(data.size());
        bool finished = state != "starting" && state != "running";
        return json::value(json::object{{"run_id", id},
                                        {"stream", stream},
                                        {"offset", offset},
                                        {"next_offset", next},
                                        {"size", size},
                                        {"data", valid_utf8(data)},
                                        {"eof", finished && next >= size},
                                        {"state", state}});
      });
}

// -- session.rollback
// -------------------------------------------------------------

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
  promise rp;
  params::rollback req;
  std::string target;
  journal_row journal;
  std::shared_ptr<fault_set> faults;
  json::array removed;
  /// Runs killed before the rollback (null unless kill_processes).
  json::value terminated;
};

using run_ptr = std::shared_ptr<rollback_run>;

void rollback_fail(const run_ptr& run, caf::error err) {
  mutation_failed(run->self, run->rp, std::move(err));
}

/// Undoes the journal after a step failed with nothing left on disk.
void rollback_abort(const run_ptr& run, caf::error err) {
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
  run_blocking(self, [paths, a, s, names, faults]() -> expected<json::value> {
    faults->trigger("purge.before_discard");
    for (const auto& name : names)
      if (auto err = store::remove_in_session(paths, a, s, name))
        log::warn("session", "cannot delete " + name + ": " + message_of(err));
    faults->trigger("purge.after_discard");
    return json::value();
  }).then([](json::value&) {}, [](caf::error&) {});
}

/// After the reply: the replaced tree waits for an idle moment.
void rollback_discard(const run_ptr& run) {
  auto self = run->self;
  self->state.discards.push_back(run->journal.discard_name);
  arm_idle_work(self);
}

void rollback_finish(const run_ptr& run) {
  auto self = run->self;
  auto& st = self->state;
  json::object fields{{"checkpoint_id", run->target},
                      {"origin", run->req.origin},
                      {"scrub_runtime", run->req.scrub_runtime},
                      {"removed_runtime_entries", run->removed}};
  metadata_write done;
  // Needs no fsync: if a power cut loses it, the journal (old_moved) is
  // still there and start-up commits the rollback from the disk, which the
  // fsync after the second rename made durable.
  done.durable = false;
  done.set_heads.push_back({st.agent_id(), st.session_id(), run->target});
  done.delete_journals.push_back(ref(self));
  done.audit.push_back(audit(self, "session.rollback", fields));
  commit(
      self, std::move(done),
      [run]() {
        run->faults->trigger("rollback.after_commit");
        auto owner = run->self;
        auto& state = owner->state;
        state.dag.move_head(run->target);
        ++state.rollbacks;
        // After a runtime reset the session stays fenced by the reset token
        // until runtime.complete_reset.
        end_mutation(owner);
        json::object r{
            {"agent_id", state.agent_id()},
            {"session_id", state.session_id()},
            {"checkpoint_id", run->target},
            {"relative_workspace",
             store::layout::rel_current(state.agent_id(), state.session_id())},
            {"removed_runtime_entries", run->removed}};
        if (!run->terminated.is_null())
          r["terminated_process_runs"] = run->terminated;
        run->rp.deliver(json::value(std::move(r)));
        rollback_discard(run);
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
expected<json::value> swap_in_checkpoint(const store::layout& paths,
                                         const std::string& a,
                                         const std::string& s,
                                         const journal_row& j,
                                         fault_set& faults) {
  faults.trigger("rollback.before_snapshot");
  if (auto err =
          store::make_restore(paths, a, s, j.checkpoint_id, j.restore_name))
    return err;
  json::array removed;
  if (j.scrub_runtime) {
    auto entries =
        store::scrub_runtime(paths.session_dir(a, s) + "/" + j.restore_name);
    if (!entries) {
      store::remove_in_session(paths, a, s, j.restore_name);
      return entries.error();
    }
    for (auto& e : *entries)
      removed.emplace_back(e);
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
  return json::value(std::move(removed));
}

/// Guards, target resolution and the swap; answers through `rp`.
/// `terminated` lists runs killed first (kill_processes), or is null.
void begin_rollback(self_ptr self, promise rp, params::rollback req,
                    bool after_reset, json::value terminated) {
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
    if (st.phase == "mutating") {
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
        mutation_step(
            owner,
            [paths, a, s, j, faults]() -> expected<json::value> {
              return swap_in_checkpoint(paths, a, s, j, *faults);
            },
            [run](json::value& removed) {
              run->removed = std::move(removed.as_array());
              rollback_finish(run);
            },
            [run](caf::error err) { rollback_abort(run, err); });
      },
      [run](caf::error err) { rollback_fail(run, err); });
}

caf::result<json::value> handle_rollback(self_ptr self, const json::object& p,
                                         bool after_reset) {
  auto& st = self->state;
  bool kill_default = st.runs.config && st.runs.config->kill_on_rollback;
  auto req = params::decode_rollback(p, after_reset, kill_default);
  if (!req)
    return req.error();
  if (req->kill_processes && !st.runs.config)
    return make_error(errc::unsupported,
                      "kill_processes requires process tracking");
  auto rp = self->make_response_promise<json::value>();
  if (!req->kill_processes) {
    begin_rollback(self, rp, std::move(*req), after_reset, json::value());
    return rp;
  }
  if (st.runs.active.empty()) {
    begin_rollback(self, rp, std::move(*req), after_reset, json::array{});
    return rp;
  }
  // Kill the session's process tree first; roll back once the run ended.
  auto id = st.runs.active;
  kill_run(self, id, "rollback",
           [self, rp, req = std::move(*req), after_reset, id]() mutable {
             if (!self->state.runs.active.empty()) {
               rp.deliver(conflict("Session cgroup termination timed out; "
                                   "rollback remains fenced"));
               return;
             }
             begin_rollback(self, rp, std::move(req), after_reset,
                            json::array{json::value(id)});
           });
  return rp;
}

// -- leases, background executions, runtime reset
// -----------------------------------

caf::result<json::value> handle_acquire(self_ptr self) {
  if (auto err = require_alive(self))
    return err;
  auto& st = self->state;
  if (mutating(self))
    return conflict("session is being checkpointed or restored: " + st.key());
  if (!st.leases.empty())
    return conflict("session already has an active execution: " + st.key());
  auto token = random_hex_token();
  st.leases.emplace(token, os::now_ns());
  return json_reply(json::object{{"lease_token", token}});
}

caf::result<json::value> handle_release(self_ptr self, const json::object& p) {
  auto token = params::required_string(p, "lease_token");
  if (!token)
    return token.error();
  bool released = self->state.leases.erase(*token) > 0;
  return json_reply(json::object{{"released", released}});
}

caf::result<json::value> handle_register_background(self_ptr self,
                                                    const json::object& p) {
  auto sandbox = params::required_string(p, "sandbox_id");
  if (!sandbox)
    return sandbox.error();
  auto execution = params::required_string(p, "execution_id");
  if (!execution)
    return execution.error();
  if (auto err = require_alive(self))
    return err;
  if (mutating(self))
    return conflict("session is being restored: " + self->state.key());
  self->state.background[*execution] = *sandbox;
  return json_reply(
      json::object{{"registered", true}, {"execution_id", *execution}});
}

/// Fences the session for a runtime reset; answers through `rp`.
void begin_reset(self_ptr self, promise rp, json::value terminated) {
  if (auto err = require_alive(self)) {
    rp.deliver(err);
    return;
  }
  auto& st = self->state;
  if (mutating(self)) {
    rp.deliver(conflict("session mutation already in progress: " + st.key()));
    return;
  }
  if (!st.leases.empty()) {
    rp.deliver(conflict("session has active executions: " + st.key()));
    return;
  }
  st.reset_token = random_hex_token();
  json::array executions;
  for (const auto& [execution, sandbox] : st.background)
    executions.push_back(
        json::object{{"sandbox_id", sandbox}, {"execution_id", execution}});
  json::object r{{"reset_token", st.reset_token},
                 {"executions", std::move(executions)}};
  if (!terminated.is_null())
    r["terminated_process_runs"] = std::move(terminated);
  rp.deliver(json::value(std::move(r)));
}

caf::result<json::value> handle_begin_reset(self_ptr self,
                                            const json::object& p) {
  auto& st = self->state;
  bool kill_default = st.runs.config && st.runs.config->kill_on_rollback;
  auto kill = params::optional_bool(p, "kill_processes", kill_default);
  if (!kill)
    return kill.error();
  if (*kill && !st.runs.config)
    return make_error(errc::unsupported,
                      "kill_processes requires process tracking");
  auto rp = self->make_response_promise<json::value>();
  if (!*kill) {
    begin_reset(self, rp, json::value());
  } else if (st.runs.active.empty()) {
    begin_reset(self, rp, json::array{});
  } else {
    auto id = st.runs.active;
    kill_run(self, id, "rollback", [self, rp, id]() mutable {
      begin_reset(self, rp, json::array{json::value(id)});
    });
  }
  return rp;
}

caf::result<json::value> handle_complete_reset(self_ptr self,
                                               const json::object& p) {
  auto token = params::required_string(p, "reset_token");
  if (!token)
    return token.error();
  auto success = params::optional_bool(p, "success", false);
  if (!success)
    return success.error();
  auto& st = self->state;
  if (st.reset_token.empty() || st.reset_token != *token)
    return make_error(errc::not_found, "unknown runtime reset token");
  if (st.phase == "mutating")
    return conflict("session mutation already in progress: " + st.key());
  st.reset_token.clear();
  if (*success)
    st.background.clear();
  return json_reply(json::object{{"completed", true}, {"success", *success}});
}

// An administrator's way out of a fence the prototype could only leave by
// restarting: forgets the runtime reset, every lease and every background
// registration, with an audit record of what was cleared.
caf::result<json::value> handle_unfence(self_ptr self, const json::object& p) {
  auto& st = self->state;
  if (st.phase == "mutating")
    return conflict("session mutation in progress: " + st.key());
  if (auto err = require_alive(self))
    return err;
  if (!st.runs.active.empty())
    return conflict("session still has live processes: " + st.key());
  auto origin = params::origin(p);
  json::array interrupted;
  for (const auto& id : st.runs.interrupted)
    interrupted.emplace_back(id);
  json::object cleared{{"reset", !st.reset_token.empty()},
                       {"leases", st.leases.size()},
                       {"background_executions", st.background.size()},
                       {"interrupted_runs", interrupted}};
  auto rp = self->make_response_promise<json::value>();
  auto finish = [self, rp, cleared, origin]() mutable {
    metadata_write w;
    w.audit.push_back(audit(self, "session.unfence",
                            {{"origin", origin}, {"cleared", cleared}}));
    commit(
        self, std::move(w),
        [self, rp, cleared]() mutable {
          auto& state = self->state;
          state.reset_token.clear();
          state.leases.clear();
          state.background.clear();
          state.runs.interrupted.clear();
          rp.deliver(
              json::value(json::object{{"agent_id", state.agent_id()},
                                       {"session_id", state.session_id()},
                                       {"unfenced", true},
                                       {"cleared", cleared}}));
        },
        [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  };
  if (st.runs.interrupted.empty() || !st.runs.config) {
    finish();
    return rp;
  }
  // Runs interrupted by a restart: make sure nothing of them is left in
  // the session cgroup (kill it otherwise) before lifting the fence.
  auto cfg = st.runs.config;
  auto group = cfg->cgroups.session_group(st.agent_id(), st.session_id());
  auto ids = st.runs.interrupted;
  blocking(
      self,
      [cfg, group, ids]() -> expected<json::value> {
        if (os::populated(group)) {
          os::kill_group(group);
          if (!os::wait_empty(group, 10000))
            return make_error(errc::conflict,
                              "Session cgroup termination is incomplete; "
                              "session remains fenced");
        }
        os::remove_group(group);
        for (const auto& id : ids)
          if (auto err = store::release_run(cfg->audit_root, id))
            return err;
        return json::value();
      },
      [finish](json::value&) mutable { finish(); },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

// -- session.delete
// -------------------------------------------------------------

// Deletion is crash-safe in three durable steps: the row is marked
// `deleting`, the session directory is renamed into a trash name (atomic),
// the row is removed with the audit record. Whatever a crash interrupts,
// start-up reconciliation finishes (guest/store/reconcile.cpp).
caf::result<json::value> handle_delete(self_ptr self, const json::object& p) {
  if (auto err = require_mutable(self))
    return err;
  auto origin = params::origin(p);
  auto rp = self->make_response_promise<json::value>();
  auto& st = self->state;
  begin_mutation(self, "session.delete");
  st.phase = "deleting";
  auto row = st.init.row;
  auto paths = st.init.paths;
  auto faults = std::make_shared<fault_set>(st.faults.take("session.delete"));
  auto fail = [self, rp](caf::error err) mutable {
    self->state.phase = "idle";
    self->state.mutation.clear();
    ++self->state.failures;
    rp.deliver(std::move(err));
  };
  auto result = json::object{{"agent_id", row.agent_id},
                             {"session_id", row.session_id},
                             {"deleted", true}};
  auto marked = row;
  marked.deleting = true;
  metadata_write mark;
  mark.put_sessions.push_back(marked);
  auto trash = paths.sessions_dir(row.agent_id) + "/" +
               std::string{store::trash_prefix} + random_hex_token();
  commit(
      self, std::move(mark),
      [=]() mutable {
        blocking(
            self,
            [row, paths, trash, faults]() -> expected<json::value> {
              faults->trigger("session.delete.before_rename");
              auto dir = paths.session_dir(row.agent_id, row.session_id);
              if (auto err = os::rename_path(dir, trash))
                return err;
              if (auto err = os::fsync_dir(paths.sessions_dir(row.agent_id)))
                return err;
              faults->trigger("session.delete.after_rename");
              return json::value();
            },
            [=](json::value&) mutable {
              metadata_write done;
              done.delete_sessions.push_back({row.agent_id, row.session_id});
              done.audit.push_back(
                  audit(self, "session.delete", {{"origin", origin}}));
              commit(
                  self, std::move(done),
                  [=]() mutable {
                    self->state.phase = "retired";
                    // Space is reclaimed after the commit; a crash here leaves
                    // only a trash directory for start-up to purge.
                    blocking(
                        self,
                        [trash]() -> expected<json::value> {
                          if (auto err = os::remove_tree(trash))
                            log::warn("session",
                                      "purging " + trash +
                                          " failed: " + message_of(err));
                          return json::value();
                        },
                        [=](json::value&) mutable {
                          rp.deliver(json::value(result));
                          self->quit();
                        },
                        [=](caf::error) mutable {
                          rp.deliver(json::value(result));
                          self->quit();
                        });
                  },
                  fail);
            },
            [=](caf::error err) mutable {
              // Nothing moved: clear the mark so a restart does not finish a
              // deletion the caller saw fail.
              metadata_write undo;
              undo.put_sessions.push_back(row);
              caf::anon_send(self->state.init.metadata, atom::write_v,
                             std::move(undo));
              fail(std::move(err));
            });
      },
      fail);
  return rp;
}

json::value dump(self_ptr self) {
  const auto& st = self->state;
  json::object o;
  o["kind"] = "session";
  o["agent_id"] = st.agent_id();
  o["session_id"] = st.session_id();
  o["state"] = st.phase;
  if (!st.mutation.empty())
    o["mutation"] = st.mutation;
  if (!st.fence_reason.empty())
    o["fence_reason"] = st.fence_reason;
  o["mailbox"] = self->mailbox().size();
  o["resources"] = json::object{
      {"subvolume", st.init.paths.current(st.agent_id(), st.session_id())},
      {"checkpoints", st.dag.size()}};
  o["leases"] = st.leases.size();
  o["pending_discards"] = st.discards.size();
  o["unsynced_checkpoints"] = st.unsynced_intents.size();
  o["lane"] = static_cast<bool>(*st.lane);
  o["background_executions"] = st.background.size();
  o["reset_fence"] = !st.reset_token.empty();
  o["head"] =
      st.dag.head().empty() ? json::value(nullptr) : json::value(st.dag.head());
  o["counters"] = json::object{{"requests", st.requests},
                               {"failures", st.failures},
                               {"restarts", st.init.restarts},
                               {"checkpoints_created", st.checkpoints_created},
                               {"rollbacks", st.rollbacks}};
  o["uptime_ms"] = uptime_ms(st.started);
  return o;
}

/// Dispatches one session-scoped RPC action to its handler.
caf::result<json::value> handle_rpc(self_ptr self, const std::string& action,
                                    const json::object& p) {
  if (action == "session.describe")
    return handle_describe(self);
  if (action == "checkpoint.list")
    return handle_checkpoint_list(self, p);
  if (action == "checkpoint.describe")
    return handle_checkpoint_describe(self, p);
  if (action == "checkpoint.create")
    return handle_checkpoint_create(self, p);
  if (action == "checkpoint.delete")
    return handle_checkpoint_delete(self, p);
  if (action == "checkpoint.diff")
    return handle_checkpoint_diff(self, p);
  if (action == "session.rollback")
    return handle_rollback(self, p, false);
  if (action == "session.rollback_after_runtime_reset")
    return handle_rollback(self, p, true);
  if (action == "process.start")
    return handle_process_start(self, p);
  if (action == "session.configure")
    return handle_configure(self, p);
  if (action == "process.get")
    return handle_process_get(self, p);
  if (action == "process.list")
    return handle_process_list(self);
  if (action == "process.stop")
    return handle_process_stop(self, p);
  if (action == "process.output")
    return handle_process_output(self, p);
  if (action == "process.events")
    return handle_process_events(self, p);
  if (action == "execution.acquire")
    return handle_acquire(self);
  if (action == "execution.release")
    return handle_release(self, p);
  if (action == "runtime.register_background")
    return handle_register_background(self, p);
  if (action == "runtime.begin_reset")
    return handle_begin_reset(self, p);
  if (action == "runtime.complete_reset")
    return handle_complete_reset(self, p);
  if (action == "session.unfence")
    return handle_unfence(self, p);
  if (action == "session.delete")
    return handle_delete(self, p);
  if (action == "debug.fault") {
    if (auto err = self->state.faults.arm(p))
      return err;
    return json_reply(json::object{{"armed", true}});
  }
  return make_error(errc::invalid_argument, "unknown action: " + action);
}

} // namespace

session_actor::behavior_type session(self_ptr self, session_init init) {
  self->state.dag =
      store::checkpoint_dag(std::move(init.checkpoints), init.row.head);
  init.checkpoints.clear();
  self->state.runs.config = init.exec;
  for (const auto& id : init.interrupted_runs)
    self->state.leases["run:" + id] = os::now_ns();
  self->state.runs.interrupted = std::move(init.interrupted_runs);
  self->state.init = std::move(init);
  self->state.started = std::chrono::steady_clock::now();
  self->attach_functor([lane = self->state.lane] { retire_lane(*lane); });
  // Whatever ends this actor (shutdown, failure) ends its runs too.
  if (self->state.runs.config) {
    auto group = self->state.runs.config->cgroups.session_group(
        self->state.agent_id(), self->state.session_id());
    self->attach_functor([group] { os::kill_group(group); });
  }
  // An orderly stop (daemon shutdown) ends the active run first, recorded
  // as stopped with reason daemon_shutdown.
  self->set_exit_handler([self](caf::exit_msg& em) {
    shutdown_runs(self);
    self->quit(em.reason);
  });
  self->set_exception_handler([self](std::exception_ptr& ep) {
    return actor_failed(ep, "session " + self->state.key(),
                        self->state.handling);
  });
  return {
      [self](atom::rpc, const std::string& action,
             const json::value& body) -> caf::result<json::value> {
        auto& st = self->state;
        ++st.requests;
        // Left set if the handler throws: the failure log names it.
        st.handling = action;
        // Lets tests fail this actor in the middle of a request.
        st.faults.trigger(action);
        auto result = handle_rpc(self, action, body.as_object());
        st.handling.clear();
        return result;
      },
      [self](atom::retire, bool retire) -> caf::result<caf::ok_atom> {
        auto& st = self->state;
        if (!retire) {
          if (st.phase == "retired")
            st.phase = "idle";
          return caf::ok_atom_v;
        }
        if (auto err = require_mutable(self))
          return err;
        st.phase = "retired";
        return caf::ok_atom_v;
      },
      [self](atom::purge) { idle_work(self); },
      [self](atom::started, const std::string& id, int64_t pid) {
        on_run_started(self, id, pid);
      },
      [self](atom::finished, const std::string& id, int64_t code, bool empty,
             const std::string& error) {
        on_run_finished(self, id, code, empty, error);
      },
      [self](atom::timeout, const std::string& id) {
        kill_run(self, id, "timeout", {});
      },
      [self](atom::dump) -> json::value { return dump(self); },
  };
}

} // namespace allox
