// SPDX-License-Identifier: Apache-2.0
// A run's interactive input: a pipe to its stdin, or a pseudo-terminal
// for stdin, stdout and stderr. The daemon keeps the writing end (the
// pipe's, or the terminal's master) to serve process.input and
// process.resize; a terminal's output is copied into the run's stdout log,
// so it reaches process.output and the live stream like any output.
#pragma once

#include "guest/os/unique_fd.hpp"
#include "messages/errors.hpp"

#include <cstdint>
#include <string_view>

namespace allox::sandbox {

/// Both ends of a run's input.
struct run_stdio {
  /// The run's side: its stdin (a pipe's read end or a terminal).
  os::unique_fd child;
  /// The daemon's side: the pipe's write end or the terminal's master,
  /// non-blocking.
  os::unique_fd input;
  /// A terminal: `child` is also the run's stdout and stderr, and the
  /// master's output goes to the stdout log (pump_terminal).
  bool terminal = false;
};

/// A pipe for the run's stdin.
expected<run_stdio> open_stdin_pipe();

/// A pseudo-terminal of `rows` x `cols`.
expected<run_stdio> open_terminal(uint16_t rows, uint16_t cols);

/// Sets a terminal's size (the run sees SIGWINCH).
caf::error resize_terminal(int master, uint16_t rows, uint16_t cols);

/// Writes what fits without blocking; returns the bytes written (0 when
/// the run is not reading).
expected<size_t> write_input(int fd, std::string_view data);

/// Copies a terminal's output to `out` until every process holding the
/// terminal has closed it. Blocking; runs on a thread of the run worker.
void pump_terminal(int master, int out);

} // namespace allox::sandbox
