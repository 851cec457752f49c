// SPDX-License-Identifier: Apache-2.0
// The session's disk share (the disk.max limit): a Btrfs qgroup limit, so
// that a session filling the store is stopped at its share with EDQUOT
// while the others keep checkpointing and the daemon keeps committing its
// catalog. Under simple quotas the limit is on the session's disk group,
// which counts what it wrote into current/ and still pins, checkpoints
// included; under full quotas on the bytes current/ references
// (guest/os/btrfs_quota.hpp). A new session, a fork and a session from
// before the store's quotas have no group yet, a rollback puts another
// subvolume in place (it joins the group or takes the share before it goes
// live, rollback.cpp), and the daemon's default may have changed across a
// restart: so every start of the actor checks the group and the limit, and
// session.configure sets it. The session's run logs, when they are a
// subvolume of their own (guest/store/run_output.hpp), have the share as
// their limit too, set at the same times.
#include "actors/session/handlers.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "guest/store/run_output.hpp"

namespace allox::session_facets {

std::optional<uint64_t> disk_share(self_ptr self) {
  const auto* cfg = self->state.runs.config.get();
  if (!cfg)
    return std::nullopt;
  return disk_share_of(*cfg, effective_settings(self).limits);
}

void enforce_disk_share(self_ptr self, fail_fn done) {
  auto& st = self->state;
  if (!st.runs.config || !st.runs.config->store_quotas) {
    done(caf::none);
    return;
  }
  auto share = disk_share(self);
  const auto& cfg = *st.runs.config;
  auto current = st.init.paths.current(st.agent_id(), st.session_id());
  auto logs = cfg.output_subvolumes
                  ? store::session_output_dir(cfg.audit_root, st.agent_id(),
                                              st.session_id())
                  : std::string{};
  // Sysfs reads and quota-tree searches: cheap enough here, and they spare
  // most starts a lane.
  auto now = os::read_share(current);
  // Without a group (nothing to read under simple quotas) the lane makes one.
  bool simple = cfg.store_simple_quotas;
  if ((now ? now->max_referenced == share : !share && !simple) &&
      (logs.empty() || os::subvolume_limited(logs, share))) {
    done(caf::none);
    return;
  }
  mutation_step<step_done>(
      self,
      [current, logs, share]() -> expected<step_done> {
        if (auto group = os::ensure_disk_group(current); !group)
          return group.error();
        if (auto err = os::limit_share(current, share))
          return err;
        if (!logs.empty()) {
          if (auto err = store::ensure_output_dir(logs, true))
            return err;
          if (auto err = os::limit_subvolume(logs, share))
            return err;
        }
        return step_done{};
      },
      [done](step_done&) { done(caf::none); },
      [done](caf::error err) { done(std::move(err)); });
}

} // namespace allox::session_facets
