// SPDX-License-Identifier: Apache-2.0
// Supervision, written once for the three supervisors: the SUPERVISOR (of
// the core actors and the fronts), AGENTS (of its AGENTs) and AGENT (of its
// SESSIONs). Each keeps a table of child slots and leaves the rest here:
//
//   child_slot       a child's handle, status and restart budget
//   stop_children    the parent's exit stops the children stage by stage
//                    (a stage is told once the one before has ended); the
//                    supervisor ends after the last of them
//   on_child_down    one decision per child that ended: restart, give up
//                    or forget (docs/architecture.md, "Supervision")
//   supervise        installs the exit, down and exception handlers
//   serve            one request: counted, named for the failure log, its
//                    fault point fired, then admitted or refused
//
// What a restart loads and what a failure audits stays with each actor:
// those are its own rows and records.
#pragma once

#include "actors/failures.hpp"
#include "guest/faults.hpp"
#include "messages/errors.hpp"

#include <caf/actor_addr.hpp>
#include <caf/actor_clock.hpp>
#include <caf/exit_reason.hpp>
#include <caf/system_messages.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <string>
#include <utility>

namespace allox {

/// Where a supervised child (a session of an AGENT, an agent of AGENTS)
/// is; system.dump prints it.
enum class child_status {
  /// Its actor serves.
  running,
  /// Being created; requests for it wait or get not_found.
  creating,
  /// Failed; its replacement is being loaded.
  restarting,
  /// Being deleted.
  deleting,
  /// Failed more often than the restart budget allows; left for an
  /// operator.
  failed,
};

/// The status's name, as system.dump shows it.
inline const char* to_string(child_status s) {
  switch (s) {
  case child_status::running:
    return "running";
  case child_status::creating:
    return "creating";
  case child_status::restarting:
    return "restarting";
  case child_status::deleting:
    return "deleting";
  case child_status::failed:
    return "failed";
  }
  return "unknown";
}

namespace supervision {

/// Restarts allowed per child within `restart_window` before the child is
/// marked failed and left for an operator: a child that fails at once
/// every time would otherwise restart in a loop, each time auditing.
inline constexpr size_t max_restarts_per_window = 5;
inline constexpr std::chrono::seconds restart_window{60};

/// The actor clock's time: the steady clock in the daemon, the test
/// coordinator's clock in deterministic tests (so a test can move a
/// failure out of the window).
using time_point = caf::actor_clock::time_point;

/// How often one child may fail within a window and still be restarted.
class restart_budget {
public:
  explicit restart_budget(size_t max = max_restarts_per_window,
                          caf::timespan window = restart_window)
      : max_(max), window_(window) {}

  /// Records a failure at `now`; false once the child failed more than
  /// `max` times within the window ending now.
  bool spend(time_point now) {
    failures_.push_back(now);
    while (!failures_.empty() && now - failures_.front() > window_)
      failures_.pop_front();
    return failures_.size() <= max_;
  }

  /// Failures still inside the window at the last spend.
  size_t recent() const { return failures_.size(); }

private:
  size_t max_;
  caf::timespan window_;
  std::deque<time_point> failures_;
};

/// One supervised child. Supervisors derive their slot from it and add
/// what a restart needs (the child's rows).
template <class Handle>
struct child_slot {
  /// Null while no actor of the child lives.
  Handle handle;
  child_status status = child_status::running;
  /// How often the child was re-spawned (system.dump's counter).
  uint32_t restarts = 0;
  restart_budget budget;
  /// When the child is stopped: every child of a stage has ended before
  /// the next stage is told (the catalog after the sessions that write to
  /// it).
  uint8_t stop_stage = 0;
};

/// What every supervisor's state carries; its own state derives from it.
struct supervisor_base {
  /// Set by the parent's exit: the supervisor ends with `stop_reason` once
  /// every child has ended (their last writes come first;
  /// docs/architecture.md, "Shutdown").
  bool stopping = false;
  caf::error stop_reason;
  /// The stage being stopped (child_slot::stop_stage).
  uint8_t stopping_stage = 0;
  /// The action being handled, for the failure log.
  std::string handling;
  uint64_t requests = 0;
  uint64_t failures = 0;
  /// Fault points armed for this actor (test builds).
  fault_set faults;
};

/// What to do about a child that ended.
enum class down_decision {
  /// Not a child of this table (or one already forgotten).
  unknown,
  /// It ended normally, on purpose (user_shutdown, being deleted) or while
  /// the supervisor stops: its slot only loses the handle.
  forget,
  /// It failed within its budget: re-spawn it (`restarts` counted).
  restart,
  /// It failed past its budget: its slot is marked failed and left so.
  give_up,
};

/// The decision of on_child_down, with the child's entry of the table (a
/// key and slot pair) for restart and give_up, else null.
template <class Map>
struct child_down {
  down_decision decision = down_decision::unknown;
  typename Map::value_type* child = nullptr;
};

/// True once no child of `children` has a live actor.
template <class Map>
bool no_live_children(const Map& children) {
  for (const auto& kv : children)
    if (kv.second.handle)
      return false;
  return true;
}

/// The entry of `children` whose live actor is `source`, or null.
template <class Map>
typename Map::value_type* find_child(Map& children,
                                     const caf::actor_addr& source) {
  for (auto& kv : children)
    if (kv.second.handle && kv.second.handle.address() == source)
      return &kv;
  return nullptr;
}

/// Decides about `slot`, whose actor ended with `reason` at `now`: the
/// handle is dropped in every case, the budget spent on a failure.
template <class Slot>
down_decision decide(Slot& slot, const caf::error& reason, time_point now) {
  slot.handle = nullptr;
  if (!reason || reason == caf::exit_reason::user_shutdown ||
      slot.status == child_status::deleting)
    return down_decision::forget;
  if (!slot.budget.spend(now)) {
    slot.status = child_status::failed;
    return down_decision::give_up;
  }
  ++slot.restarts;
  return down_decision::restart;
}

/// While stopping: tells the live children of the lowest stage that has
/// any to stop, or ends the supervisor (its state is gone from there on)
/// once no child lives.
template <class Self, class Map>
void tell_next_stage(Self self, Map& children) {
  auto& st = self->state;
  if (no_live_children(children)) {
    self->quit(st.stop_reason);
    return;
  }
  uint8_t next = UINT8_MAX;
  for (const auto& kv : children)
    if (kv.second.handle)
      next = std::min(next, kv.second.stop_stage);
  st.stopping_stage = next;
  for (auto& kv : children)
    if (kv.second.handle && kv.second.stop_stage == next)
      self->send_exit(kv.second.handle, st.stop_reason);
}

/// While stopping, after a child ended: the next stage is told once no
/// child of the current one lives. A stage is told once; a child of a
/// later stage that ended early is simply not waited for.
template <class Self, class Map>
void stop_next_stage(Self self, Map& children) {
  auto& st = self->state;
  for (const auto& kv : children)
    if (kv.second.handle && kv.second.stop_stage == st.stopping_stage)
      return; // the stage being stopped still has a live child
  tell_next_stage(self, children);
}

/// The down handler's part shared by every supervisor: finds the child
/// that ended and decides. While stopping, every child is forgotten and
/// the supervisor ends after the last one.
template <class Self, class Map>
child_down<Map> on_child_down(Self self, Map& children,
                              const caf::down_msg& dm) {
  auto* child = find_child(children, dm.source);
  auto& st = self->state;
  if (st.stopping) {
    if (child != nullptr)
      child->second.handle = nullptr;
    stop_next_stage(self, children); // may end the supervisor
    return {down_decision::forget, nullptr};
  }
  if (child == nullptr)
    return {};
  auto decision = decide(child->second, dm.reason, self->clock().now());
  if (decision == down_decision::forget)
    return {decision, nullptr};
  return {decision, child};
}

/// The parent's exit: the live children of the first stage are told to
/// stop, each later stage once the one before has ended, and the
/// supervisor ends once the last child has (at once without children).
/// Children end on their own exit handlers, after their own children: a
/// session's last catalog writes are queued before METADATA is stopped.
template <class Self, class Map>
void stop_children(Self self, Map& children, const caf::error& reason) {
  auto& st = self->state;
  st.stopping = true;
  st.stop_reason = reason;
  tell_next_stage(self, children);
}

/// Installs the handlers of a supervisor whose children are the table
/// `member` of its state: only `parent`'s exit stops it (a child that
/// ends sends an exit message too, over its link, and its down message
/// decides); every ended child goes through on_child_down, and a restart
/// or give-up to `on_failure(self, child_down&, reason)`; an exception
/// escaping a handler is logged as `actor`'s, with the action it handled.
template <class Self, class Member, class OnFailure>
void supervise(Self self, caf::actor_addr parent, Member member,
               std::string actor, OnFailure on_failure) {
  self->set_exception_handler([self, actor](std::exception_ptr& ep) {
    return actor_failed(ep, actor, self->state.handling);
  });
  self->set_exit_handler([self, parent, member](caf::exit_msg& em) {
    if (em.source != parent)
      return; // a child's: its down message decides
    stop_children(self, self->state.*member, em.reason);
  });
  self->set_down_handler([self, member, on_failure](caf::down_msg& dm) {
    auto down = on_child_down(self, self->state.*member, dm);
    if (down.decision == down_decision::restart ||
        down.decision == down_decision::give_up)
      on_failure(self, down, dm.reason);
  });
}

/// Runs a request's handler with `handling` naming its action for the
/// failure log: left set if the handler throws, cleared once it returned.
template <class Handler>
auto while_handling(std::string& handling, const char* action,
                    Handler handler) {
  handling = action;
  auto result = handler();
  handling.clear();
  return result;
}

/// Admits every request (a supervisor without a phase that refuses any).
struct admit_all {
  template <class Self>
  caf::error operator()(Self) const {
    return caf::none;
  }
};

/// Serves one command with its handler: counted, named for the failure
/// log, with the fault point of its action (where tests fail the actor
/// mid-request), then refused with what `admit` returns, if anything.
template <class Command, class Self, class Handler, class Admit = admit_all>
auto serve(Self self, const Command& c, Handler handler, Admit admit = {})
    -> decltype(handler(self, c)) {
  using result_type = decltype(handler(self, c));
  auto& st = self->state;
  ++st.requests;
  return while_handling(st.handling, Command::name, [&]() -> result_type {
    st.faults.trigger(Command::name);
    if (auto err = admit(self))
      return err;
    return handler(self, c);
  });
}

} // namespace supervision

} // namespace allox
