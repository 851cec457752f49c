// SPDX-License-Identifier: Apache-2.0
// The session's disk share (the disk.max limit): a Btrfs qgroup limit on
// the bytes its workspace, current/, references, so that a session filling
// the store is stopped at its share with EDQUOT while the others keep
// checkpointing and the daemon keeps committing its catalog. Btrfs keeps
// the limit with the subvolume; a rollback puts another subvolume in place
// (it takes the share before it goes live, rollback.cpp), a fork makes a new
// one, and the daemon's default may have changed across a restart: so every
// start of the actor checks the limit, and session.configure sets it.
#include "actors/session/handlers.hpp"
#include "guest/log.hpp"
#include "guest/os/btrfs_quota.hpp"

namespace allox::session_facets {

std::optional<uint64_t> disk_share(self_ptr self) {
  const auto* cfg = self->state.runs.config.get();
  if (!cfg || !cfg->store_quotas)
    return std::nullopt;
  for (const auto& [name, value] : effective_settings(self).limits)
    if (name == disk_limit)
      if (auto bytes = os::parse_disk_limit(value, cfg->store_bytes))
        return *bytes;
  return std::nullopt;
}

void enforce_disk_share(self_ptr self, fail_fn done) {
  auto& st = self->state;
  if (!st.runs.config || !st.runs.config->store_quotas) {
    done(caf::none);
    return;
  }
  auto share = disk_share(self);
  auto current = st.init.paths.current(st.agent_id(), st.session_id());
  // A sysfs read: cheap enough here, and it spares most starts a lane.
  auto now = os::read_qgroup(current);
  if ((now && now->max_referenced == share) || (!now && !share)) {
    done(caf::none);
    return;
  }
  mutation_step<step_done>(
      self,
      [current, share]() -> expected<step_done> {
        if (auto err = os::limit_referenced(current, share))
          return err;
        return step_done{};
      },
      [done](step_done&) { done(caf::none); },
      [done](caf::error err) { done(std::move(err)); });
}

} // namespace allox::session_facets
