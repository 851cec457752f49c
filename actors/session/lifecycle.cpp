// SPDX-License-Identifier: Apache-2.0
// The lifecycle facet of the SESSION actor: session.delete, after which
// the actor quits, and the retirement agent.delete asks of each session.
#include "actors/session/handlers.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "guest/store/layout.hpp"
#include "guest/store/run_output.hpp"
#include "messages/ids.hpp"

#include <caf/send.hpp>

#include <memory>
#include <string>
#include <vector>

namespace allox::session_facets {

namespace {

/// Baselines of forks into this session (its own) and out of its
/// checkpoints that are still being made.
std::vector<fork_ready> pending_baselines(session_state& st) {
  auto pending = drop_ready(st.forks_out);
  if (st.init.baseline_ready.valid())
    pending.push_back(st.init.baseline_ready);
  return drop_ready(pending);
}

/// Runs `next` on this actor once no baseline of `st` is being made: at
/// once when none is, else after a worker has waited for them.
template <class Next>
void after_baselines(self_ptr self, Next next, fail_fn fail) {
  auto baselines = pending_baselines(self->state);
  if (baselines.empty()) {
    next();
    return;
  }
  blocking<step_done>(
      self,
      [baselines]() -> expected<step_done> {
        for (const auto& made : baselines)
          made.wait();
        return step_done{};
      },
      [next](step_done&) mutable { next(); }, std::move(fail));
}

} // namespace

// -- session.delete -----------------------------------------------------------

// Deletion is crash-safe in three durable steps: the row is marked
// `deleting`, the session directory is renamed into a trash name (atomic),
// the row is removed with the audit record. Whatever a crash interrupts,
// start-up reconciliation finishes (guest/store/reconcile.cpp).
caf::result<session_deleted> handle(self_ptr self,
                                    const cmd::session_delete& c) {
  if (auto err = require_mutable(self))
    return err;
  const auto& origin = c.origin;
  auto rp = self->make_response_promise<session_deleted>();
  auto& st = self->state;
  begin_mutation(self, "session.delete");
  st.phase = session_phase::deleting;
  auto row = st.init.row;
  auto paths = st.init.paths;
  auto faults = std::make_shared<fault_set>(st.faults.take("session.delete"));
  auto fail = [self, rp](caf::error err) mutable {
    self->state.phase = session_phase::idle;
    self->state.mutation.clear();
    ++self->state.failures;
    rp.deliver(std::move(err));
  };
  auto result = session_deleted{row.agent_id, row.session_id};
  auto marked = row;
  marked.deleting = true;
  metadata_write mark;
  mark.put_sessions.push_back(marked);
  auto trash = paths.sessions_dir(row.agent_id) + "/" +
               std::string{store::trash_prefix} + random_hex_token();
  // Its runs' logs go with it; a crash before leaves them to a session
  // made again under the same name, whose new runs reclaim them.
  auto logs = st.runs.config
                  ? store::session_output_dir(st.runs.config->audit_root,
                                              row.agent_id, row.session_id)
                  : std::string{};
  // The deletion is marked (and so finished by start-up recovery) only
  // once no baseline of a fork, into this session or out of its
  // checkpoints, is still being made from or into its directory.
  auto mark_and_move = [=]() mutable {
    commit(
        self, std::move(mark),
        [=]() mutable {
          blocking<step_done>(
              self,
              [row, paths, trash, faults]() -> expected<step_done> {
                faults->trigger("session.delete.before_rename");
                auto dir = paths.session_dir(row.agent_id, row.session_id);
                if (auto err = os::rename_path(dir, trash))
                  return err;
                if (auto err = os::fsync_dir(paths.sessions_dir(row.agent_id)))
                  return err;
                faults->trigger("session.delete.after_rename");
                return step_done{};
              },
              [=](step_done&) mutable {
                metadata_write done;
                done.delete_sessions.push_back({row.agent_id, row.session_id});
                done.audit.push_back(
                    audit(self, "session.delete", {{"origin", origin}}));
                commit(
                    self, std::move(done),
                    [=]() mutable {
                      self->state.phase = session_phase::retired;
                      // Space is reclaimed after the commit; a crash here
                      // leaves only a trash directory for start-up to purge.
                      blocking<step_done>(
                          self,
                          [trash, logs]() -> expected<step_done> {
                            for (const auto& dir : {trash, logs})
                              if (auto err = os::remove_tree(dir))
                                log::warn("session",
                                          "purging " + dir +
                                              " failed: " + message_of(err));
                            return step_done{};
                          },
                          [=](step_done&) mutable {
                            rp.deliver(result);
                            self->quit();
                          },
                          [=](caf::error) mutable {
                            rp.deliver(result);
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
  };
  after_baselines(self, mark_and_move, fail);
  return rp;
}

// -- retirement (agent.delete) -----------------------------------------------

// A retired session takes no further commands; agent.delete then removes
// the agent's directory. So the answer waits, off the actor's thread, for
// any baseline still being made from or into this session's directory.
caf::result<caf::ok_atom> handle_retire(self_ptr self, bool retire) {
  auto& st = self->state;
  if (!retire) {
    if (st.phase == session_phase::retired)
      st.phase = session_phase::idle;
    return caf::ok_atom_v;
  }
  if (auto err = require_mutable(self))
    return err;
  st.phase = session_phase::retired;
  auto rp = self->make_response_promise<caf::ok_atom>();
  after_baselines(
      self, [rp]() mutable { rp.deliver(caf::ok_atom_v); },
      [rp](caf::error err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

} // namespace allox::session_facets
