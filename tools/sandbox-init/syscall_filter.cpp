// SPDX-License-Identifier: Apache-2.0
#include "tools/sandbox-init/syscall_filter.hpp"

#include <linux/btrfs.h>
#include <seccomp.h>

#include <cerrno>
#include <initializer_list>
#include <memory>
#include <sched.h>
#include <sys/ioctl.h>

namespace allox::sandbox {

namespace {

/// Refused outright, whatever the arguments.
constexpr const char* denied[] = {
    // The kernel's attack surface an agent has no use for.
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register",
    // Kernel keyrings are not namespaced.
    "keyctl", "add_key", "request_key",
    // Mount changes: the sandbox's view of the file system is fixed.
    "mount", "umount2", "pivot_root", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "open_tree", "mount_setattr",
    // Namespaces: joining another one.
    "setns",
    // Replacing or extending the kernel.
    "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module",
};

/// ioctl requests refused whatever the file.
constexpr scmp_datum_t refused_ioctls[] = {
    // Injecting input into a terminal or driving the console.
    TIOCSTI, TIOCLINUX,
    // Shaping Btrfs subvolumes, which Btrfs lets the owner of a directory
    // do without privilege. A subvolume made inside the workspace is a
    // tree of its own, outside every checkpoint and, under full quotas,
    // outside the session's disk share: writing into it would escape the
    // share. The workspace's trees are the daemon's alone.
    BTRFS_IOC_SUBVOL_CREATE, BTRFS_IOC_SUBVOL_CREATE_V2, BTRFS_IOC_SNAP_CREATE,
    BTRFS_IOC_SNAP_CREATE_V2, BTRFS_IOC_SNAP_DESTROY, BTRFS_IOC_SNAP_DESTROY_V2,
    BTRFS_IOC_SUBVOL_SETFLAGS};

/// Namespace flags that would give a process a fresh namespace (and with
/// a user namespace, capabilities in it).
constexpr scmp_datum_t new_namespaces[] = {
    CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWNET,   CLONE_NEWPID,
    CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP};

struct ctx_deleter {
  void operator()(scmp_filter_ctx c) const { seccomp_release(c); }
};

} // namespace

int install_syscall_filter() {
  std::unique_ptr<void, ctx_deleter> ctx{seccomp_init(SCMP_ACT_ALLOW)};
  if (!ctx)
    return -ENOMEM;
  auto deny = SCMP_ACT_ERRNO(EPERM);
  for (const char* name : denied) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
      continue; // not on this architecture
    if (int rc = seccomp_rule_add(ctx.get(), deny, nr, 0); rc < 0)
      return rc;
  }
  // unshare and clone with namespace flags; clone3 passes its flags in
  // memory a filter cannot read, so it answers ENOSYS and the C library
  // falls back to clone, which is filtered.
  // One rule per flag: a rule matches when the flag's bit is set.
  for (const char* name : {"unshare", "clone"}) {
    int nr = seccomp_syscall_resolve_name(name);
    for (auto flag : new_namespaces)
      if (int rc = seccomp_rule_add(ctx.get(), deny, nr, 1,
                                    SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
          rc < 0)
        return rc;
  }
  int clone3 = seccomp_syscall_resolve_name("clone3");
  if (clone3 != __NR_SCMP_ERROR)
    if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), clone3, 0);
        rc < 0)
      return rc;
  int ioctl_nr = seccomp_syscall_resolve_name("ioctl");
  for (scmp_datum_t request : refused_ioctls)
    if (int rc =
            seccomp_rule_add(ctx.get(), deny, ioctl_nr, 1,
                             SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, request));
        rc < 0)
      return rc;
  return seccomp_load(ctx.get());
}

} // namespace allox::sandbox
