// Events a SESSION receives from its own helpers (run workers, its
// timers), as structs instead of positional tuples: the fields say what
// they are, and an absent value is absent rather than -1 or "".
#pragma once

#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>

#include <cstdint>
#include <string>

namespace allox {

/// A run's first process is running in the session cgroup.
struct run_started {
  std::string run_id;
  int64_t pid = 0;
};

/// A run ended (or never started).
struct run_finished {
  std::string run_id;
  /// The root process's exit code; none when it never ran.
  caf::optional<int64_t> exit_code;
  /// The run's cgroup is empty: nothing of the run is left.
  bool cgroup_empty = true;
  /// Why the run failed to start or to finish cleanly; none when it did.
  caf::optional<std::string> error;
};

/// A run's timeout expired (a timer of the session).
struct run_timeout {
  std::string run_id;
};

/// A process.wait reached its timeout (a timer of the session).
struct wait_timeout {
  std::string run_id;
  uint64_t waiter = 0;
};

/// A session lifted the fence of its interrupted runs (session.unfence):
/// its AGENT stops handing them to the session's next actor.
struct fence_lifted {
  std::string session_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fence_lifted& x) {
  return f(caf::meta::type_name("fence_lifted"), x.session_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_started& x) {
  return f(caf::meta::type_name("run_started"), x.run_id, x.pid);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_finished& x) {
  return f(caf::meta::type_name("run_finished"), x.run_id, x.exit_code,
           x.cgroup_empty, x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_timeout& x) {
  return f(caf::meta::type_name("run_timeout"), x.run_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wait_timeout& x) {
  return f(caf::meta::type_name("wait_timeout"), x.run_id, x.waiter);
}

} // namespace allox
