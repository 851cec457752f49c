// SPDX-License-Identifier: Apache-2.0
#include "daemon/qgroup_sweep.hpp"

#include "guest/log.hpp"
#include "guest/os/btrfs_quota.hpp"

namespace allox::daemon {

qgroup_sweep::qgroup_sweep(uv_loop_t* loop, std::string root)
    : root_(std::move(root)) {
  uv_timer_init(loop, &timer_);
  timer_.data = this;
  work_.data = this;
}

void qgroup_sweep::start(std::chrono::milliseconds interval) {
  auto ms = static_cast<uint64_t>(interval.count());
  uv_timer_start(
      &timer_,
      [](uv_timer_t* t) {
        auto* self = static_cast<qgroup_sweep*>(t->data);
        if (self->busy_)
          return;
        self->busy_ = true;
        uv_queue_work(
            t->loop, &self->work_,
            [](uv_work_t* w) {
              auto* s = static_cast<qgroup_sweep*>(w->data);
              auto n = os::remove_stale_qgroups(s->root_, s->empty_groups_);
              s->last_ = n ? *n : os::qgroup_sweep_result{};
              s->error_ = n ? std::string{} : message_of(n.error());
              s->empty_groups_ = s->last_.empty_groups;
            },
            [](uv_work_t* w, int) {
              auto* s = static_cast<qgroup_sweep*>(w->data);
              s->busy_ = false;
              if (!s->error_.empty())
                log::warn("daemon", "stale qgroups: " + s->error_);
              if (s->last_.trees > 0)
                // Rare (deleted trees only) and the proof that the kernel
                // kept them: said where an operator looks.
                log::info("daemon", "removed " +
                                        std::to_string(s->last_.trees) +
                                        " qgroup(s) of deleted trees");
              if (s->last_.groups > 0)
                log::info("daemon", "removed " +
                                        std::to_string(s->last_.groups) +
                                        " empty disk group(s)");
            });
      },
      ms, ms);
}

void qgroup_sweep::close() {
  auto* h = reinterpret_cast<uv_handle_t*>(&timer_);
  if (!uv_is_closing(h))
    uv_close(h, nullptr);
}

} // namespace allox::daemon
