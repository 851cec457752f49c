// SPDX-License-Identifier: Apache-2.0
// The daemon's logger: one line per record on stderr, written with a single
// write(2) so concurrent records never interleave (CAF's logger is compiled
// out in Debian's build and its default handlers print to stdout).
#pragma once

#include <string_view>

namespace allox::log {

enum class level { debug, info, warn, error };

/// Records below this level are dropped; set once at start-up.
void set_threshold(level lvl);

void write(level lvl, std::string_view component, std::string_view message);

inline void info(std::string_view component, std::string_view message) {
  write(level::info, component, message);
}
inline void warn(std::string_view component, std::string_view message) {
  write(level::warn, component, message);
}
inline void error(std::string_view component, std::string_view message) {
  write(level::error, component, message);
}
inline void debug(std::string_view component, std::string_view message) {
  write(level::debug, component, message);
}

} // namespace allox::log
