// SPDX-License-Identifier: Apache-2.0
// The embedded default store: a sparse image file, formatted Btrfs, attached
// to a loop device and mounted at the store root for the daemon's lifetime.
#pragma once

#include "messages/errors.hpp"

#include <cstdint>
#include <string>

namespace allox::os {

/// Parses sizes such as "8G", "512M", "1048576" (binary units).
expected<uint64_t> parse_size(const std::string& text);

/// Owns one loop-backed Btrfs mount. Destruction unmounts it; the loop
/// device was configured with autoclear, so the kernel detaches it as soon
/// as the mount is gone (also when the daemon is killed and the mount is
/// later removed by hand).
class loop_mount {
public:
  /// Creates and formats the image if it does not exist, attaches it and
  /// mounts it at `mount_point`. An existing mount of the same image at the
  /// same place (left by a killed daemon) is adopted.
  static expected<loop_mount> open(const std::string& image, uint64_t size,
                                   const std::string& mount_point);

  loop_mount() = default;
  loop_mount(const loop_mount&) = delete;
  loop_mount& operator=(const loop_mount&) = delete;
  loop_mount(loop_mount&& other) noexcept;
  loop_mount& operator=(loop_mount&& other) noexcept;
  ~loop_mount();

  const std::string& device() const { return device_; }
  const std::string& mount_point() const { return mount_point_; }
  bool adopted() const { return adopted_; }

  /// Unmounts now; returns what went wrong, if anything.
  caf::error unmount();

  /// Leaves the mount (and its loop device) in place past this object,
  /// for the next daemon to adopt.
  void release() { mount_point_.clear(); }

private:
  std::string device_;
  std::string image_;
  std::string mount_point_;
  bool adopted_ = false;
};

/// The loop device whose backing file is `image`, or an empty string.
std::string loop_device_for(const std::string& image);

/// Detaches a loop device (used by tests and clean-up paths).
caf::error detach_loop_device(const std::string& device);

} // namespace allox::os
