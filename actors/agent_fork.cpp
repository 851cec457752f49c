// session.fork in the AGENT actor: a new session of this agent whose
// current/ is a writable snapshot of a checkpoint of another, with a
// baseline checkpoint that records where it came from.
//
//   journal {op: fork} for the new session (durable)
//   -> [no checkpoint given: checkpoint.create on the source]
//   -> worker: the new session's directories
//   -> SOURCE (its lane): snapshot checkpoints/<id> -> new current/
//   -> worker: baseline snapshot current/ -> checkpoints/<baseline>, fsync
//   -> METADATA: session row, baseline row, head, journal removed, audit
//   -> spawn the session actor -> reply
//
// A crash before the last commit leaves the journal: start-up deletes the
// half-made session (guest/store/reconcile.cpp), so a fork is either
// complete or absent. The source is never changed (beyond the checkpoint
// taken when none was given) and keeps running.
#include "actors/agent_detail.hpp"
#include "actors/blocking.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "messages/ids.hpp"

#include <memory>
#include <string>

namespace allox::agent_detail {

namespace {

using promise = caf::typed_response_promise<json::value>;

/// What one fork carries from step to step.
struct fork_job {
  cmd::session_fork cmd;
  std::string checkpoint_id;
  checkpoint_row baseline;
  promise rp;
  /// Fault points armed for session.fork (tests).
  fault_set faults;
};

using job_ptr = std::shared_ptr<fork_job>;

/// The fork failed after its journal: the half-made session is removed and
/// the journal with it (start-up does the same after a crash).
void abort_fork(self_ptr self, job_ptr job, caf::error err) {
  auto& st = self->state;
  const auto& aid = st.init.row.agent_id;
  const auto& sid = job->cmd.new_session_id;
  ++st.failures;
  st.sessions.erase(sid);
  auto paths = st.init.paths;
  run_blocking(self,
               [paths, aid, sid]() -> expected<json::value> {
                 auto dir = paths.session_dir(aid, sid);
                 if (os::kind_of(dir) != os::entry_kind::missing)
                   if (auto e = os::remove_tree(dir))
                     return e;
                 return json::value();
               })
      .then(
          // The error is answered once the half-made session is gone, so
          // a caller never sees a refused fork's directory.
          [self, aid, sid, job, err](json::value&) mutable {
            metadata_write w;
            w.delete_journals.push_back({aid, sid});
            caf::anon_send(self->state.init.metadata, atom::write_v,
                           std::move(w));
            job->rp.deliver(std::move(err));
          },
          [job, err](caf::error&) mutable {
            // The journal stays: start-up finishes the clean-up.
            job->rp.deliver(std::move(err));
          });
}

void commit_fork(self_ptr self, job_ptr job) {
  auto& st = self->state;
  const auto& aid = st.init.row.agent_id;
  const auto& sid = job->cmd.new_session_id;
  auto& entry = st.sessions[sid];
  entry.row.head = job->baseline.checkpoint_id;
  metadata_write w;
  w.put_sessions.push_back(entry.row);
  w.put_checkpoints.push_back(job->baseline);
  w.set_heads.push_back({aid, sid, job->baseline.checkpoint_id});
  w.delete_journals.push_back({aid, sid});
  w.audit.push_back(
      audit("session.fork", aid, sid,
            {{"origin", job->cmd.origin},
             {"source_session_id", job->cmd.session.session_id},
             {"checkpoint_id", job->checkpoint_id},
             {"baseline_checkpoint_id", job->baseline.checkpoint_id}}));
  self->request(st.init.metadata, caf::infinite, atom::write_v, std::move(w))
      .then(
          [self, job, sid](caf::ok_atom) {
            job->faults.trigger("session.fork.after_commit");
            auto& e = self->state.sessions[sid];
            spawn_session(self, e, {job->baseline});
            store::checkpoint_dag dag{{job->baseline},
                                      job->baseline.checkpoint_id};
            auto r = describe_session(e.row, dag);
            r["forked_from"] =
                json::object{{"session_id", job->cmd.session.session_id},
                             {"checkpoint_id", job->checkpoint_id}};
            job->rp.deliver(json::value(std::move(r)));
          },
          [self, job](caf::error& err) { abort_fork(self, job, err); });
}

/// The baseline: a read-only snapshot of the new current/, named and
/// described like any checkpoint.
void take_baseline(self_ptr self, job_ptr job) {
  auto& st = self->state;
  const auto& aid = st.init.row.agent_id;
  const auto& sid = job->cmd.new_session_id;
  auto& b = job->baseline;
  b.agent_id = aid;
  b.session_id = sid;
  b.created_at_ns = os::now_ns();
  // The form of an automatic checkpoint.create id.
  b.checkpoint_id = "cp-" + std::to_string(b.created_at_ns);
  b.origin = job->cmd.origin;
  b.message = "forked from " + job->cmd.session.session_id + "@" +
              job->checkpoint_id;
  b.metadata = json::serialize(json::object{
      {"forked_from",
       json::object{{"session_id", job->cmd.session.session_id},
                    {"checkpoint_id", job->checkpoint_id}}}});
  auto paths = st.init.paths;
  auto id = b.checkpoint_id;
  run_blocking(self,
               [paths, aid, sid, id,
                faults = job->faults]() mutable -> expected<json::value> {
                 faults.trigger("session.fork.before_baseline");
                 if (auto e = os::create_snapshot(paths.current(aid, sid),
                                                  paths.checkpoint(aid, sid, id),
                                                  true))
                   return e;
                 if (auto e = os::fsync_dir(paths.checkpoints_dir(aid, sid)))
                   return e;
                 if (auto e = os::fsync_dir(paths.sessions_dir(aid)))
                   return e;
                 faults.trigger("session.fork.before_commit");
                 return json::value();
               })
      .then([self, job](json::value&) { commit_fork(self, job); },
            [self, job](caf::error& err) { abort_fork(self, job, err); });
}

/// The source snapshots its checkpoint into the new session's current/.
void snapshot_from_source(self_ptr self, job_ptr job) {
  auto& st = self->state;
  auto it = st.sessions.find(job->cmd.session.session_id);
  if (it == st.sessions.end() || !it->second.handle)
    return abort_fork(self, job,
                      make_error(errc::not_found,
                                 "session does not exist: " +
                                     session_key(st.init.row.agent_id,
                                                 job->cmd.session.session_id)));
  auto paths = st.init.paths;
  const auto& aid = st.init.row.agent_id;
  const auto& sid = job->cmd.new_session_id;
  cmd::session_fork_into into{job->cmd.session, job->checkpoint_id,
                              paths.current(aid, sid)};
  self->request(it->second.handle, caf::infinite, std::move(into))
      .then(
          [self, job](json::value& r) {
            job->checkpoint_id =
                std::string{r.as_object().at("checkpoint_id").as_string()};
            take_baseline(self, job);
          },
          [self, job](caf::error& err) { abort_fork(self, job, err); });
}

/// The new session's directories (its current/ comes from the source).
void make_dirs(self_ptr self, job_ptr job) {
  auto paths = self->state.init.paths;
  auto aid = self->state.init.row.agent_id;
  auto sid = job->cmd.new_session_id;
  run_blocking(self,
               [paths, aid, sid]() -> expected<json::value> {
                 if (os::kind_of(paths.session_dir(aid, sid)) !=
                     os::entry_kind::missing)
                   return make_error(errc::already_exists,
                                     "session already exists: " +
                                         session_key(aid, sid));
                 if (auto e = os::ensure_managed_dir(
                         paths.session_dir(aid, sid), 0755, "session workspace"))
                   return e;
                 if (auto e = os::ensure_managed_dir(paths.checkpoints_dir(aid, sid),
                                                     0755, "checkpoint directory"))
                   return e;
                 return json::value();
               })
      .then([self, job](json::value&) { snapshot_from_source(self, job); },
            [self, job](caf::error& err) { abort_fork(self, job, err); });
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
          [self, job](json::value& r) {
            job->checkpoint_id =
                std::string{r.as_object().at("checkpoint_id").as_string()};
            make_dirs(self, job);
          },
          [self, job](caf::error& err) { abort_fork(self, job, err); });
}

} // namespace

caf::result<json::value> handle_session_fork(self_ptr self,
                                             const cmd::session_fork& c) {
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
  job->rp = self->make_response_promise<json::value>();
  job->faults = st.faults.take("session.fork");
  // The journal first: from here a crash leaves nothing half-made behind.
  metadata_write w;
  journal_row j;
  j.agent_id = aid;
  j.session_id = sid;
  j.op = "fork";
  j.phase = "staging";
  j.origin = c.origin;
  w.put_journals.push_back(j);
  self->request(st.init.metadata, caf::infinite, atom::write_v, std::move(w))
      .then(
          [self, job](caf::ok_atom) {
            if (job->checkpoint_id.empty())
              checkpoint_source(self, job);
            else
              make_dirs(self, job);
          },
          [self, job, sid](caf::error& err) mutable {
            ++self->state.failures;
            self->state.sessions.erase(sid);
            job->rp.deliver(std::move(err));
          });
  return job->rp;
}

} // namespace allox::agent_detail
