// SPDX-License-Identifier: Apache-2.0
// Steps of a session.fork told from the thread that ran them to the
// threads that must not go on before them.
//
// A fork answers once its new current/ is made. Its baseline (a second
// snapshot of the same checkpoint, and a second transaction commit) is
// taken after the answer, on the source's lane: that step waits for the
// answer (so its commit does not hold up the fork's catalog write), and
// the new session's lane waits for the baseline before its first step (so
// nothing of the new session, a rollback to the baseline, its deletion, a
// fork of it, reaches the baseline before it exists). Local only: carried
// by cmd::session_fork_into and session_init, never serialized.
#pragma once

#include "messages/errors.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>
#include <vector>

namespace allox {

/// The waiters' end: ready with the step's outcome (none when it was
/// done). Waited for on worker threads only.
using fork_ready = std::shared_future<caf::error>;

/// Drops the steps already done from `pending`, and returns it.
inline std::vector<fork_ready>& drop_ready(std::vector<fork_ready>& pending) {
  pending.erase(std::remove_if(pending.begin(), pending.end(),
                               [](const fork_ready& f) {
                                 return f.wait_for(std::chrono::seconds{0}) ==
                                        std::future_status::ready;
                               }),
                pending.end());
  return pending;
}

/// The end of whoever runs the step. Tells its outcome once; dropped
/// untold (the step never ran: its actor or lane went away), it tells an
/// error, so no waiter waits forever.
class fork_signal {
public:
  fork_signal() : ready_(promise_.get_future().share()) {}
  fork_signal(const fork_signal&) = delete;
  fork_signal& operator=(const fork_signal&) = delete;

  ~fork_signal() {
    tell(make_error(errc::internal, "a step of the fork never ran"));
  }

  const fork_ready& ready() const { return ready_; }

  void tell(caf::error outcome) {
    if (told_)
      return;
    told_ = true;
    promise_.set_value(std::move(outcome));
  }

private:
  std::promise<caf::error> promise_;
  fork_ready ready_;
  bool told_ = false;
};

} // namespace allox
