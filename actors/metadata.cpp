// SPDX-License-Identifier: Apache-2.0
#include "actors/metadata.hpp"

#include "actors/dump.hpp"
#include "guest/log.hpp"
#include "guest/os/sched.hpp"

#include <caf/stateful_actor.hpp>

namespace allox {

namespace {

using self_ptr = metadata_actor::stateful_pointer<metadata_state>;

/// Copies the log into the database file. A failure leaves the log as it
/// is (SQLite reads through it), so it is logged and the next tick tries
/// again.
void checkpoint(self_ptr self) {
  auto& st = self->state;
  auto left = st.db->checkpoint();
  if (!left) {
    log::warn("metadata", message_of(left.error()));
    return;
  }
  ++st.wal_checkpoints;
  st.wal_floor = *left > 0 ? st.db->wal_pages() : 0;
}

/// After a commit: the log's bound reached, a checkpoint now; past the
/// idle threshold, a tick that checkpoints once no commit came for a while.
void after_commit(self_ptr self) {
  auto& st = self->state;
  st.last_commit = self->clock().now();
  auto pages = st.db->wal_pages() - st.wal_floor;
  if (pages >= wal_max_pages) {
    checkpoint(self);
  } else if (pages >= wal_idle_pages && !st.checkpoint_armed) {
    st.checkpoint_armed = true;
    self->delayed_send(self, wal_idle, atom::tick_v);
  }
}

void flush(self_ptr self) {
  auto& st = self->state;
  st.flush_pending = false;
  if (st.queued.empty())
    return;
  std::vector<const metadata_write*> batch;
  batch.reserve(st.queued.size());
  for (const auto& w : st.queued)
    batch.push_back(&w);
  auto began = std::chrono::steady_clock::now();
  auto err = st.db->apply(batch);
  st.commit_seconds.observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
          .count());
  ++st.commits;
  st.batches += st.queued.size();
  st.queued.clear();
  auto waiting = std::move(st.waiting);
  st.waiting.clear();
  if (err) {
    ++st.failures;
    log::error("metadata", "commit failed: " + message_of(err));
  }
  for (auto& rp : waiting) {
    if (err)
      rp.deliver(err);
    else
      rp.deliver(caf::ok_atom_v);
  }
  // After the answers: a checkpoint due now delays the next commit only.
  after_commit(self);
}

} // namespace

metadata_actor::behavior_type
metadata(self_ptr self, std::shared_ptr<store::catalog> db, std::string path) {
  self->state.db = std::move(db);
  self->state.path = std::move(path);
  self->state.started = std::chrono::steady_clock::now();
  // Commits are queued by requests that are answered right after. On a
  // guest with two vCPUs, this thread waking up used to preempt the reply
  // for the length of the commit (0.4 ms, docs/benchmarks.md). Only when
  // detached: otherwise the thread belongs to the scheduler or a test.
  if (self->getf(caf::abstract_actor::is_detached_flag))
    if (auto err = os::use_batch_scheduling())
      log::warn("metadata", "commits may delay replies: " + message_of(err));
  // Stopped last (the supervisor waits for every session first): the
  // writes they queued on their way out, such as the final rows of runs
  // killed at shutdown, are committed before the catalog closes.
  self->set_exit_handler([self](caf::exit_msg& em) {
    flush(self);
    self->quit(em.reason);
  });
  return {
      [self](atom::load) -> caf::result<catalog_snapshot> {
        flush(self);
        auto snap = self->state.db->load();
        if (!snap)
          return snap.error();
        return std::move(*snap);
      },
      [self](atom::load,
             const std::string& a) -> caf::result<catalog_snapshot> {
        flush(self);
        auto snap = self->state.db->load_agent(a);
        if (!snap)
          return snap.error();
        return std::move(*snap);
      },
      [self](atom::load, const std::string& a,
             const std::string& s) -> caf::result<catalog_snapshot> {
        flush(self);
        auto snap = self->state.db->load_session(a, s);
        if (!snap)
          return snap.error();
        return std::move(*snap);
      },
      [self](atom::write, metadata_write& w) -> caf::result<caf::ok_atom> {
        auto& st = self->state;
        st.queued.push_back(std::move(w));
        auto rp = self->make_response_promise<caf::ok_atom>();
        st.waiting.push_back(rp);
        // The flush message queues behind every write already in the
        // mailbox, so they all land in the same transaction.
        if (!st.flush_pending) {
          st.flush_pending = true;
          self->send(self, atom::flush_v);
        }
        return rp;
      },
      [self](atom::flush) { flush(self); },
      [self](atom::tick) {
        auto& st = self->state;
        st.checkpoint_armed = false;
        auto quiet = self->clock().now() - st.last_commit;
        if (quiet < wal_idle) {
          st.checkpoint_armed = true;
          self->delayed_send(
              self,
              std::chrono::duration_cast<std::chrono::milliseconds>(wal_idle -
                                                                    quiet),
              atom::tick_v);
          return;
        }
        if (st.db->wal_pages() > st.wal_floor)
          checkpoint(self);
      },
      [self](atom::audit, const audit_query& q) -> caf::result<audit_page> {
        // A reader must see every write queued before its question.
        flush(self);
        auto r = self->state.db->audit(q);
        if (!r)
          return r.error();
        return std::move(*r);
      },
      [self](atom::runs, const run_query& q) -> caf::result<run_page> {
        // As for the audit trail: the answer includes every queued write.
        flush(self);
        ++self->state.run_queries;
        auto r = self->state.db->runs(q);
        if (!r)
          return r.error();
        return std::move(*r);
      },
      [self](atom::writes,
             const session_ref& s) -> caf::result<write_set_page> {
        // As for runs: the answer includes every queued write.
        flush(self);
        auto r = self->state.db->write_sets(s);
        if (!r)
          return r.error();
        return std::move(*r);
      },
      [self](atom::stats) {
        const auto& st = self->state;
        actor_stats s;
        s.kind = "metadata";
        s.top()
            .fact("state", st.queued.empty() ? "idle" : "busy")
            .gauge("mailbox", self->mailbox().size());
        s.group("resources").fact("database", st.path);
        s.group("counters")
            .counter("commits", st.commits)
            .counter("batches", st.batches)
            .counter("failures", st.failures)
            .counter("run_queries", st.run_queries)
            .counter("wal_checkpoints", st.wal_checkpoints);
        s.top()
            .gauge("wal_pages", st.db->wal_pages())
            .histogram("commit_seconds", st.commit_seconds.to_stats())
            .gauge("uptime_ms", uptime_ms(st.started));
        return s;
      },
  };
}

} // namespace allox
