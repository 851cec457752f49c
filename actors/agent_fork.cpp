// SPDX-License-Identifier: Apache-2.0
// session.fork in the AGENT actor: a new session of this agent whose
// current/ is a writable snapshot of a checkpoint of another, with a
// baseline checkpoint that records where it came from.
//
//   [no checkpoint given: checkpoint.create on the source]
//   -> SOURCE (its lane): the new session's directory, checkpoints/ and
//      the baseline's intent record (guest/store/create_intent.hpp); the
//      checkpoint snapshotted as its current/ -> answered
//   -> METADATA (not synced, not waited for): session row, baseline row,
//      head, audit
//   -> spawn the session actor (its lane waits for the baseline) -> reply
//   -> SOURCE (its lane's next step, queued with the first): the baseline,
//      a read-only snapshot of the same checkpoint (messages/fork_signal.hpp)
//
// The reply waits for one snapshot: each snapshot ends in its own
// transaction commit (even two taken at once), and the baseline is the
// second. Nothing waits for the catalog: the first snapshot's
// commit makes the intent record durable with it, as for
// checkpoint.create, and the new session's idle work later syncs the rows
// and drops the record. After a crash, start-up takes a missing baseline
// from the checkpoint, adopts the session with its baseline row from the
// record, and removes a fork whose current/ was never made
// (guest/store/fork_recovery.cpp): a fork is either complete or absent.
// The source is never changed (beyond the checkpoint taken when none was
// given) and keeps running.
#include "actors/agent_detail.hpp"
#include "actors/blocking.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "guest/store/create_intent.hpp"
#include "messages/ids.hpp"

#include <memory>
#include <string>

namespace allox::agent_detail {

namespace {

using promise = caf::typed_response_promise<session_forked>;

/// What one fork carries from step to step.
struct fork_job {
  cmd::session_fork cmd;
  std::string checkpoint_id;
  checkpoint_row baseline;
  promise rp;
  /// Fault points armed for session.fork (tests).
  fault_set faults;
  /// The baseline's outcome, once the source has been asked for it.
  fork_ready baseline_ready;
  /// Told when the fork is answered or has failed (dropped untold: failed);
  /// the source makes the baseline after it.
  std::shared_ptr<fork_signal> answered = std::make_shared<fork_signal>();
};

using job_ptr = std::shared_ptr<fork_job>;

/// The fork failed: the half-made session is removed (start-up does the
/// same after a crash).
void abort_fork(self_ptr self, job_ptr job, caf::error err) {
  auto& st = self->state;
  const auto& aid = st.init.row.agent_id;
  const auto& sid = job->cmd.new_session_id;
  ++st.failures;
  auto paths = st.init.paths;
  // Refused for an existing directory: that one is not the fork's.
  bool ours = code_of(err) != errc::already_exists;
  job->answered->tell(err);
  run_blocking<step_done>(
      self,
      [paths, aid, sid, ours,
       ready = job->baseline_ready]() -> expected<step_done> {
        // The source's lane may still be making the baseline in
        // this directory.
        if (ready.valid())
          ready.wait();
        auto dir = paths.session_dir(aid, sid);
        if (ours && os::kind_of(dir) != os::entry_kind::missing)
          if (auto e = os::remove_tree(dir))
            return e;
        return step_done{};
      })
      .then(
          // The error is answered once the half-made session is gone, so
          // a caller never sees a refused fork's directory; the id stays
          // taken until then, so a new session of that id cannot lose its
          // directory to this clean-up.
          [self, sid, job, err](step_done&) mutable {
            self->state.sessions.erase(sid);
            self->state.init.forks->sessions.erase(sid);
            job->rp.deliver(std::move(err));
          },
          [self, sid, job, err](caf::error&) mutable {
            // Start-up removes what is left (no row, no current/).
            self->state.sessions.erase(sid);
            self->state.init.forks->sessions.erase(sid);
            job->rp.deliver(std::move(err));
          });
}

void commit_fork(self_ptr self, job_ptr job) {
  job->faults.trigger("session.fork.before_commit");
  auto& st = self->state;
  const auto& aid = st.init.row.agent_id;
  const auto& sid = job->cmd.new_session_id;
  auto& entry = st.sessions[sid];
  entry.row.head = job->baseline.checkpoint_id;
  metadata_write w;
  // Not synced: the intent record is the durable copy until the session's
  // idle work syncs the catalog.
  w.durable = false;
  w.put_sessions.push_back(entry.row);
  w.put_checkpoints.push_back(job->baseline);
  w.set_heads.push_back({aid, sid, job->baseline.checkpoint_id});
  w.audit.push_back(
      audit("session.fork", aid, sid,
            {{"origin", job->cmd.origin},
             {"source_session_id", job->cmd.session.session_id},
             {"checkpoint_id", job->checkpoint_id},
             {"baseline_checkpoint_id", job->baseline.checkpoint_id}}));
  // Answered without waiting for the catalog: the first snapshot's commit
  // made the intent record durable, and start-up recovery adopts the fork
  // from it. The write goes first, so it comes before any of the new
  // session's own writes.
  self->request(st.init.metadata, caf::infinite, atom::write_v, std::move(w))
      .then(
          [job](caf::ok_atom) {
            job->faults.trigger("session.fork.after_commit");
          },
          [self, sid](caf::error& err) {
            // Without its rows the session is not served until start-up
            // recovery adopts it from its intent record.
            log::error("agent",
                       "fork into " + sid + ": catalog write failed (" +
                           message_of(err) + "); not served until restart");
            auto it = self->state.sessions.find(sid);
            if (it == self->state.sessions.end() || !it->second.handle)
              return;
            auto handle = std::move(it->second.handle);
            it->second.handle = nullptr;
            it->second.status = child_status::failed;
            self->send_exit(handle, caf::exit_reason::user_shutdown);
          });
  st.init.forks->sessions[sid].baseline_ready = job->baseline_ready;
  spawn_session(self, entry, {job->baseline}, {job->baseline.checkpoint_id});
  store::checkpoint_dag dag{{job->baseline}, job->baseline.checkpoint_id};
  job->rp.deliver(session_forked{view_of(entry.row, dag),
                                 job->cmd.session.session_id,
                                 job->checkpoint_id});
  job->answered->tell(caf::none);
}

/// The source makes the new session's directory, snapshots its checkpoint
/// into the new current/, then (after the reply) into the baseline.
void snapshot_from_source(self_ptr self, job_ptr job) {
  auto& st = self->state;
  auto it = st.sessions.find(job->cmd.session.session_id);
  if (it == st.sessions.end() || !it->second.handle)
    return abort_fork(self, job,
                      make_error(errc::not_found,
                                 "session does not exist: " +
                                     session_key(st.init.row.agent_id,
                                                 job->cmd.session.session_id)));
  cmd::session_fork_into into{
      job->cmd.session, job->checkpoint_id, job->baseline,
      job->answered->ready(),
      // The agent keeps only the waiting end: should the source drop the
      // command unhandled, the signal tells its waiters so.
      std::make_shared<fork_signal>()};
  job->baseline_ready = into.baseline_made->ready();
  auto& out = st.init.forks->sessions[it->first].forks_out;
  drop_ready(out);
  out.push_back(job->baseline_ready);
  self->request(it->second.handle, caf::infinite, std::move(into))
      .then([self, job](fork_current_made&) { commit_fork(self, job); },
            [self, job](caf::error& err) { abort_fork(self, job, err); });
}

/// The baseline's row, named and described like any checkpoint.
checkpoint_row baseline_row(const std::string& aid, const job_ptr& job) {
  checkpoint_row b;
  b.agent_id = aid;
  b.session_id = job->cmd.new_session_id;
  b.created_at_ns = os::now_ns();
  // The form of an automatic checkpoint.create id.
  b.checkpoint_id = "cp-" + std::to_string(b.created_at_ns);
  b.origin = job->cmd.origin;
  b.message =
      "forked from " + job->cmd.session.session_id + "@" + job->checkpoint_id;
  b.metadata = json::serialize(json::object{
      {"forked_from", json::object{{"session_id", job->cmd.session.session_id},
                                   {"checkpoint_id", job->checkpoint_id}}}});
  return b;
}

/// Names the baseline, then hands the fork to the source.
void prepare(self_ptr self, job_ptr job) {
  job->baseline = baseline_row(self->state.init.row.agent_id, job);
  snapshot_from_source(self, job);
}

/// Without a checkpoint_id the source's current/ is checkpointed first,
/// through the source's own checkpoint.create.
void checkpoint_source(self_ptr self, job_ptr job) {
  auto& st = self->state;
  auto it = st.sessions.find(job->cmd.session.session_id);
  if (it == st.sessions.end() || !it->second.handle)
    return abort_fork(self, job,
                      make_error(errc::not_found, "session does not exist"));
  cmd::checkpoint_create create;
  create.session = job->cmd.session;
  create.req.origin = job->cmd.origin;
  create.req.message = "fork to " + job->cmd.new_session_id;
  self->request(it->second.handle, caf::infinite, std::move(create))
      .then(
          [self, job](checkpoint_created& r) {
            job->checkpoint_id = r.row.checkpoint_id;
            prepare(self, job);
          },
          [self, job](caf::error& err) { abort_fork(self, job, err); });
}

} // namespace

caf::result<session_forked> handle(self_ptr self, const cmd::session_fork& c) {
  auto& st = self->state;
  const auto& aid = st.init.row.agent_id;
  const auto& sid = c.new_session_id;
  auto src = st.sessions.find(c.session.session_id);
  if (src == st.sessions.end() || src->second.status != child_status::running)
    return make_error(errc::not_found,
                      "session does not exist: " +
                          session_key(aid, c.session.session_id));
  if (st.sessions.count(sid) > 0)
    return make_error(errc::already_exists,
                      "session already exists: " + session_key(aid, sid));
  auto& entry = st.sessions[sid];
  entry.status = child_status::creating;
  entry.row = {aid, sid, os::now_ns(), false, {}, {}};
  auto job = std::make_shared<fork_job>();
  job->cmd = c;
  job->checkpoint_id = c.checkpoint_id;
  job->rp = self->make_response_promise<session_forked>();
  job->faults = st.faults.take("session.fork");
  if (job->checkpoint_id.empty())
    checkpoint_source(self, job);
  else
    prepare(self, job);
  return job->rp;
}

} // namespace allox::agent_detail
