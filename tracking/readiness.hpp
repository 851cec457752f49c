// SPDX-License-Identifier: Apache-2.0
// Whether this guest can run tracked sessions: cgroup v2 with cgroup.kill,
// kernel BTF with the three scheduler tracepoints, permission to load the
// probe, Btrfs, bubblewrap. Used by allox-guest-bootstrap; the daemon can
// run the same checks at start-up.
#pragma once

#include "messages/json.hpp"

#include <string>
#include <vector>

namespace allox::tracking {

struct readiness_check {
  std::string name;
  bool ok = false;
  std::string detail;
};

struct readiness_report {
  bool ready = false;
  std::vector<readiness_check> checks;

  /// {"ready": bool, "checks": [{"name","ok","detail"}]}
  json::value to_json() const;
};

struct readiness_options {
  /// The daemon's cgroup subtree; empty: "<v2 mount>/allox". Created if
  /// missing (as the daemon would).
  std::string cgroup_root;
  /// Where bubblewrap is: a path, or a name looked up in PATH.
  std::string bwrap = "bwrap";
  /// Load and attach the probe, then unload it.
  bool load_probe = true;
};

/// Runs every check (none stops the others).
readiness_report check_readiness(const readiness_options& opts);

} // namespace allox::tracking
