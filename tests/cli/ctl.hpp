// SPDX-License-Identifier: Apache-2.0
// Runs the alloxctl binary as a user would: its own process, a scratch
// HOME and configuration file, stdout and stderr captured apart. Golden
// files compare its output after ids and times are normalised.
#pragma once

#include "tests/fixtures/temp_dir.hpp"

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace allox::test {

struct ctl_result {
  int code = -1;
  std::string out;
  std::string err;
};

class ctl_process {
public:
  /// `url` becomes ALLOX_URL (empty: none).
  explicit ctl_process(std::string url = {});

  /// Runs `alloxctl args...` to the end (at most `timeout`).
  ctl_result run(const std::vector<std::string>& args,
                 std::chrono::milliseconds timeout = std::chrono::seconds{60});

  /// Starts `alloxctl args...` and returns at once; read() and finish()
  /// follow it.
  void start(const std::vector<std::string>& args);
  /// Reads stdout until it contains `text` or `timeout` passed; all stdout
  /// read so far.
  std::string read_until(const std::string& text,
                         std::chrono::milliseconds timeout);
  /// Sends `sig` to the started process.
  void signal(int sig);
  /// Waits for the started process; its exit code and all output.
  ctl_result finish(std::chrono::milliseconds timeout = std::chrono::seconds{
                        60});

  /// Extra environment for the next runs (e.g. ALLOX_WORKSPACE_TOKEN).
  std::map<std::string, std::string> env;
  const std::string& config_path() const { return config_; }
  const std::string& home() const { return dir_.path(); }

private:
  temp_dir dir_;
  std::string config_;
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::string out_, err_;
};

/// Ids, times, tokens, pids and scratch paths replaced by placeholders.
std::string normalise(const std::string& text);

/// Compares `text` with tests/cli/golden/`name`; with ALLOX_UPDATE_GOLDEN=1
/// writes it instead.
void check_golden(const std::string& name, const std::string& text);

} // namespace allox::test
