// SPDX-License-Identifier: Apache-2.0
// Shared by the process-tracking suites: scratch cgroups on the real
// cgroup v2 mount, processes started inside them the way the daemon does
// (clone3 CLONE_INTO_CGROUP), and a probe with a reader that collects
// every event.
#pragma once

#include "bpf/loader.hpp"
#include "guest/os/unique_fd.hpp"
#include "guest/sandbox/spawn.hpp"
#include "tracking/reader.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace allox::test {

/// The helper program (tests/tracking/helper.cpp).
std::string tracking_helper();

/// A cgroup below the v2 mount, killed, awaited and removed on
/// destruction (also when a test fails half-way).
class scratch_cgroup {
public:
  scratch_cgroup();
  scratch_cgroup(const scratch_cgroup&) = delete;
  scratch_cgroup& operator=(const scratch_cgroup&) = delete;
  ~scratch_cgroup();

  const std::string& path() const { return path_; }
  uint64_t id() const { return id_; }

  /// Starts argv[0] (absolute) inside the group; output to /dev/null.
  sandbox::child start(const std::vector<std::string>& argv);

  /// start() and wait for it; the exit status (128 + signal if killed).
  int run(const std::vector<std::string>& argv);

  /// Waits until no process is left in the group.
  bool wait_empty(std::chrono::milliseconds timeout = std::chrono::seconds{10});

private:
  std::string path_;
  uint64_t id_ = 0;
  os::unique_fd fd_;
  os::unique_fd devnull_;
};

/// `sh -c script` as argv.
std::vector<std::string> shell(const std::string& script);

/// A probe and a reader collecting every batch.
class collector {
public:
  explicit collector(bpf::probe_options opts = {},
                     tracking::reader_options ropts = {},
                     bool start_reader = true);
  ~collector();

  bpf::process_probe& probe() { return *probe_; }

  /// Starts the reader (when the constructor did not).
  void start_reader(tracking::reader_options ropts = {});

  /// ring_reader::hurry().
  void hurry() { reader_->hurry(); }

  /// The process events of one run so far, in arrival order.
  std::vector<tracking::process_event> of(uint64_t cookie) const;
  /// Every process event so far.
  std::vector<tracking::process_event> all() const;
  /// The write records of one run (0: of every run), in arrival order.
  std::vector<tracking::write_event> writes(uint64_t cookie) const;
  /// The changes by name of one run (0: of every run).
  std::vector<tracking::write_path_event> write_paths(uint64_t cookie) const;
  /// The counters of the last batch.
  tracking::reader_counters last_counters() const;
  size_t batches() const;
  const std::string& boot_id() const { return boot_id_; }

  /// Waits until the group is empty and every record the kernel produced
  /// for the run has arrived.
  bool drain(uint64_t cookie, scratch_cgroup& group,
             std::chrono::milliseconds timeout = std::chrono::seconds{10});

private:
  std::unique_ptr<bpf::process_probe> probe_;
  std::unique_ptr<tracking::ring_reader> reader_;
  mutable std::mutex mtx_;
  std::vector<tracking::process_event> events_;
  tracking::reader_counters last_;
  size_t batches_ = 0;
  std::string boot_id_;
};

/// Events of one kind.
template <class T>
std::vector<T> only(const std::vector<tracking::process_event>& events) {
  std::vector<T> out;
  for (const auto& e : events)
    if (auto* x = std::get_if<T>(&e))
      out.push_back(*x);
  return out;
}

} // namespace allox::test
