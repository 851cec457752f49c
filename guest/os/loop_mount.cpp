// SPDX-License-Identifier: Apache-2.0
#include "guest/os/loop_mount.hpp"

#include "guest/os/fs.hpp"
#include "guest/os/mountinfo.hpp"
#include "guest/os/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

extern char** environ;

namespace allox::os {

namespace {

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  if (realpath(p.c_str(), buf) == nullptr)
    return p;
  return buf;
}

// Formatting happens once per image, at start-up; there is no library for
// it, so this one step runs mkfs.btrfs.
//
// Metadata is kept once (`-m single`), not twice as mkfs.btrfs defaults to
// on one device. Both copies would sit in the same image file on the same
// host disk, so the second guards against no failure of that disk, while
// every transaction commit (each checkpoint) writes all of its tree
// blocks twice: one copy makes a snapshot of a 10,000-file tree about a
// fifth faster (docs/benchmarks.md, "Turns"). Checksums still catch a
// damaged block.
caf::error format_btrfs(const std::string& image) {
  const char* argv[] = {"mkfs.btrfs", "-q",          "-f",   "-m",
                        "single",     image.c_str(), nullptr};
  pid_t pid = 0;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  int rc = posix_spawnp(&pid, "mkfs.btrfs", &actions, nullptr,
                        const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    errno = rc;
    return sys_error("cannot run mkfs.btrfs (install btrfs-progs)");
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return make_error(errc::internal, "mkfs.btrfs failed for " + image);
  return caf::none;
}

struct attached_loop {
  std::string device;
  // Held until the mount owns the device: with autoclear, closing the last
  // fd of an unmounted loop device detaches it.
  unique_fd fd;
};

expected<attached_loop> attach(const std::string& image) {
  unique_fd file{::open(image.c_str(), O_RDWR | O_CLOEXEC)};
  if (!file)
    return sys_error("open " + image);
  unique_fd control{::open("/dev/loop-control", O_RDWR | O_CLOEXEC)};
  if (!control)
    return sys_error("open /dev/loop-control");
  for (int attempt = 0; attempt < 16; ++attempt) {
    int index = ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (index < 0)
      return sys_error("no free loop device");
    auto device = "/dev/loop" + std::to_string(index);
    unique_fd loop{::open(device.c_str(), O_RDWR | O_CLOEXEC)};
    if (!loop)
      return sys_error("open " + device);
    loop_config config{};
    config.fd = static_cast<uint32_t>(file.get());
    // Direct I/O: the store's blocks go to the image file without a second
    // copy in the page cache of the file system holding the image. Each
    // block would otherwise be cached twice, and every flush of the store
    // (each transaction commit, each fsync) would first write that second
    // copy out. The kernel falls back to buffered I/O where the image's
    // file system cannot do direct I/O.
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
    std::strncpy(reinterpret_cast<char*>(config.info.lo_file_name),
                 image.c_str(), LO_NAME_SIZE - 1);
    if (ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0)
      return attached_loop{device, std::move(loop)};
    if (errno != EBUSY)
      return sys_error("LOOP_CONFIGURE " + device);
    // Another process took this device between GET_FREE and CONFIGURE.
  }
  return make_error(errc::internal, "no free loop device after retries");
}

} // namespace

expected<uint64_t> parse_size(const std::string& text) {
  if (text.empty())
    return make_error(errc::invalid_argument, "empty size");
  size_t idx = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &idx);
  } catch (...) {
    return make_error(errc::invalid_argument, "invalid size: " + text);
  }
  auto suffix = text.substr(idx);
  uint64_t mult = 1;
  if (suffix.empty() || suffix == "B")
    mult = 1;
  else if (suffix == "K" || suffix == "KiB")
    mult = 1ull << 10;
  else if (suffix == "M" || suffix == "MiB")
    mult = 1ull << 20;
  else if (suffix == "G" || suffix == "GiB")
    mult = 1ull << 30;
  else if (suffix == "T" || suffix == "TiB")
    mult = 1ull << 40;
  else
    return make_error(errc::invalid_argument, "invalid size suffix: " + text);
  return static_cast<uint64_t>(value) * mult;
}

std::string loop_device_for(const std::string& image) {
  auto wanted = real_path(image);
  DIR* dir = opendir("/sys/block");
  if (dir == nullptr)
    return {};
  std::string found;
  while (auto* ent = readdir(dir)) {
    std::string name = ent->d_name;
    if (name.rfind("loop", 0) != 0)
      continue;
    std::ifstream in{"/sys/block/" + name + "/loop/backing_file"};
    std::string backing;
    if (in && std::getline(in, backing) && backing == wanted) {
      found = "/dev/" + name;
      break;
    }
  }
  closedir(dir);
  return found;
}

caf::error detach_loop_device(const std::string& device) {
  unique_fd loop{::open(device.c_str(), O_RDWR | O_CLOEXEC)};
  if (!loop)
    return sys_error("open " + device);
  if (ioctl(loop.get(), LOOP_CLR_FD, 0) != 0 && errno != ENXIO)
    return sys_error("LOOP_CLR_FD " + device);
  return caf::none;
}

expected<loop_mount> loop_mount::open(const std::string& image, uint64_t size,
                                      const std::string& mount_point) {
  if (auto err = make_dirs(mount_point))
    return err;
  auto target = real_path(mount_point);
  // Adopt a mount left behind by a daemon that was killed.
  if (auto mounts = read_mountinfo()) {
    for (const auto& m : *mounts) {
      if (m.mount_point != target || m.fs_type != "btrfs")
        continue;
      auto dev = loop_device_for(image);
      if (!dev.empty() && m.source == dev) {
        loop_mount result;
        result.device_ = dev;
        result.image_ = real_path(image);
        result.mount_point_ = target;
        result.adopted_ = true;
        return result;
      }
      return make_error(errc::invalid_argument,
                        "another filesystem is already mounted at " + target);
    }
  }
  struct stat st {};
  if (stat(image.c_str(), &st) != 0) {
    if (errno != ENOENT)
      return sys_error("stat " + image);
    auto slash = image.rfind('/');
    if (slash != std::string::npos && slash > 0)
      if (auto err = make_dirs(image.substr(0, slash)))
        return err;
    {
      unique_fd fd{
          ::open(image.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)};
      if (!fd)
        return sys_error("create " + image);
      if (ftruncate(fd.get(), static_cast<off_t>(size)) != 0)
        return sys_error("size " + image);
    }
    if (auto err = format_btrfs(image)) {
      ::unlink(image.c_str());
      return err;
    }
  }
  // A stale, unmounted attachment of the same image would keep the file
  // busy; detach it first.
  if (auto stale = loop_device_for(image); !stale.empty())
    detach_loop_device(stale);
  auto loop = attach(image);
  if (!loop)
    return loop.error();
  // The loop device is autoclear: once the mount is gone and our fd is
  // closed, the kernel detaches it; a failed mount detaches it right here.
  if (::mount(loop->device.c_str(), target.c_str(), "btrfs", MS_NOATIME,
              nullptr) != 0)
    return sys_error("mount " + loop->device + " at " + target +
                     " (is the image a Btrfs filesystem?)");
  loop_mount result;
  result.device_ = loop->device;
  result.image_ = real_path(image);
  result.mount_point_ = target;
  return result;
}

loop_mount::loop_mount(loop_mount&& other) noexcept
    : device_(std::move(other.device_)), image_(std::move(other.image_)),
      mount_point_(std::move(other.mount_point_)), adopted_(other.adopted_) {
  other.mount_point_.clear();
}

loop_mount& loop_mount::operator=(loop_mount&& other) noexcept {
  if (this != &other) {
    unmount();
    device_ = std::move(other.device_);
    image_ = std::move(other.image_);
    mount_point_ = std::move(other.mount_point_);
    adopted_ = other.adopted_;
    other.mount_point_.clear();
  }
  return *this;
}

loop_mount::~loop_mount() {
  unmount();
}

caf::error loop_mount::unmount() {
  if (mount_point_.empty())
    return caf::none;
  auto point = std::move(mount_point_);
  mount_point_.clear();
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (::umount2(point.c_str(), 0) == 0 || errno == EINVAL || errno == ENOENT)
      break;
    if (errno != EBUSY)
      return sys_error("umount " + point);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (attempt == 49 && ::umount2(point.c_str(), MNT_DETACH) != 0)
      return sys_error("lazy umount " + point);
  }
  // Adopted devices may predate autoclear; detach ours, but never a device
  // that meanwhile carries another image.
  if (!device_.empty() && loop_device_for(image_) == device_)
    detach_loop_device(device_);
  return caf::none;
}

} // namespace allox::os
