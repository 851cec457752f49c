// SPDX-License-Identifier: Apache-2.0
// A scratch cgroup for the benchmarks that drive the probe directly
// (tracker_storm.cpp, write_provenance.cpp): made below the v2 mount,
// processes started in it as the daemon starts a run (clone3 into the
// group), killed and removed at the end.
#pragma once

#include "bpf/loader.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/mountinfo.hpp"
#include "guest/sandbox/spawn.hpp"
#include "messages/ids.hpp"

#include <fcntl.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace allox::bench {

struct scratch_group {
  explicit scratch_group(const std::string& prefix) {
    auto mounts = os::read_mountinfo();
    auto* v2 = mounts ? os::find_cgroup2(*mounts) : nullptr;
    if (v2 == nullptr)
      throw std::runtime_error("no cgroup v2 mount");
    path = v2->mount_point + "/" + prefix + random_hex_token();
    if (auto err = os::prepare_group(path))
      throw std::runtime_error(message_of(err));
    auto opened = os::open_group(path);
    if (!opened)
      throw std::runtime_error(message_of(opened.error()));
    fd = std::move(*opened);
    id = *bpf::cgroup_id(path);
    devnull.reset(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  }
  scratch_group(const scratch_group&) = delete;
  scratch_group& operator=(const scratch_group&) = delete;
  ~scratch_group() {
    (void)os::kill_group(path);
    (void)os::wait_empty(path, 10000);
    os::remove_group(path);
  }

  /// Starts argv in the group, output to /dev/null.
  expected<sandbox::child> start(const std::vector<std::string>& argv) {
    return sandbox::spawn_in_cgroup(fd.get(), argv, -1, devnull.get(),
                                    devnull.get());
  }

  std::string path;
  uint64_t id = 0;
  os::unique_fd fd;
  os::unique_fd devnull;
};

} // namespace allox::bench
