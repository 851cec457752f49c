// SPDX-License-Identifier: Apache-2.0
// Fault injection for tests: named points inside mutating operations where a
// test can make the daemon sleep, throw or die (SIGKILL). Compiled in only
// with ALLOX_FAULT_INJECTION (dev and ci presets); release builds refuse to
// arm faults and every point is a no-op.
#pragma once

#include "messages/errors.hpp"
#include "messages/json.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace allox {

struct fault {
  std::string point;   // e.g. "session.delete.before_rename"
  std::string effect;  // "delay", "throw" or "crash"
  uint32_t millis = 0; // slept first, for "throw" and "crash" too
};

/// True when this build can inject faults.
bool fault_injection_enabled();

/// Decodes {point, effect, millis} from debug.fault parameters.
expected<fault> parse_fault(const json::object& params);

/// The faults armed for one actor. Each fires once.
class fault_set {
public:
  void arm(fault f) { armed_.push_back(std::move(f)); }

  /// Arms a fault from debug.fault parameters (see parse_fault).
  caf::error arm(const json::object& params);

  /// Moves every fault whose point starts with `prefix` into a new set, so
  /// a blocking job can carry them to its worker thread.
  fault_set take(std::string_view prefix);

  /// Fires the fault armed for `point`, if any: sleeps, then throws
  /// std::runtime_error or kills the whole process with SIGKILL.
  void trigger(std::string_view point);

  bool empty() const { return armed_.empty(); }

private:
  std::vector<fault> armed_;
};

} // namespace allox
