// SPDX-License-Identifier: Apache-2.0
// What a supervised actor does with an exception that escaped a handler:
// log which actor failed, in what, and why, then fail with `internal` so
// its supervisor restarts it. Without the log a restart hides the cause.
#pragma once

#include "guest/log.hpp"
#include "messages/errors.hpp"

#include <exception>
#include <string>

namespace allox {

/// Logs the failure of `actor` while handling `handling` (empty: a reply
/// or a timer) and returns the error the actor exits with.
inline caf::error actor_failed(const std::exception_ptr& ep,
                               const std::string& actor,
                               const std::string& handling) {
  std::string what = "unknown exception";
  try {
    std::rethrow_exception(ep);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    // nop: not derived from std::exception
  }
  auto where = handling.empty() ? std::string{"a reply or timer"} : handling;
  log::error("actor", actor + " failed in " + where + ": " + what);
  return make_error(errc::internal, what);
}

} // namespace allox
