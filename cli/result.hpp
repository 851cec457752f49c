// SPDX-License-Identifier: Apache-2.0
// Errors as values for alloxctl: every step returns a result<T> that holds
// either the value or a failure with the exit code it maps to, so main()
// prints one line and exits with a documented code (docs/cli.md).
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace allox::ctl {

/// The process exit codes of alloxctl; part of its documented interface.
enum exit_code : int {
  exit_ok = 0,
  /// The daemon answered with an error (its `error` and `code` on stderr).
  exit_daemon_error = 1,
  /// Bad command line: unknown flag, missing id, no context.
  exit_usage = 2,
  /// The daemon could not be reached (connection refused, bad URL, a reply
  /// that is not the daemon's).
  exit_unreachable = 3,
  /// The daemon does not know the action: an older daemon.
  exit_unsupported = 4,
  /// The configuration file could not be read or written.
  exit_config = 5,
  /// `run`: the run was stopped by the daemon's timeout.
  exit_run_timeout = 124,
  /// `run`: the run ended without an exit code (stopped by someone else,
  /// failed to start, interrupted).
  exit_run_no_code = 125,
  /// Interrupted with Ctrl-C (128 + SIGINT).
  exit_interrupted = 130,
};

struct failure {
  int exit = exit_daemon_error;
  std::string message;
  /// The daemon's machine-readable code, when the daemon answered.
  std::string code;
};

inline failure usage_error(std::string message) {
  return {exit_usage, std::move(message), {}};
}

inline failure config_error(std::string message) {
  return {exit_config, std::move(message), {}};
}

template <class T>
class result {
public:
  result(T value) : value_(std::move(value)) {}
  result(failure f) : failure_(std::move(f)) {}

  explicit operator bool() const { return value_.has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  const failure& error() const { return failure_; }

private:
  std::optional<T> value_;
  failure failure_;
};

/// For steps that produce nothing but may fail.
struct done {};
using status = result<done>;

inline status ok() {
  return done{};
}

} // namespace allox::ctl
