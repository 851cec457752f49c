// SPDX-License-Identifier: Apache-2.0
#include "tools/sandbox-init/identity.hpp"

#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace allox::sandbox {

int become(uid_t uid, gid_t gid) {
  // Everything that needs a capability first: the bounding set can only
  // shrink with CAP_SETPCAP, which the uid change then takes away.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return -errno;
  for (int cap = 0; cap <= 63; ++cap)
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
      return -errno;
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 &&
      errno != EINVAL)
    return -errno;
  if (::setgroups(0, nullptr) != 0)
    return -errno;
  if (::setresgid(gid, gid, gid) != 0)
    return -errno;
  // From uid 0 to another uid without SECBIT_KEEP_CAPS: the kernel clears
  // the permitted, effective and ambient sets.
  if (::setresuid(uid, uid, uid) != 0)
    return -errno;
  // Check rather than trust: a uid that could come back, or a capability
  // left, is a failure.
  if (uid != 0 &&
      (::setresuid(0, 0, 0) == 0 || ::getuid() != uid || ::geteuid() != uid))
    return -EPERM;
  // The uid change leaves the inheritable set (bubblewrap put the three
  // there): empty it, then make sure all of them are.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0)
    return -errno;
  if (::syscall(SYS_capget, &header, data) != 0)
    return -errno;
  for (const auto& d : data)
    if ((d.effective | d.permitted | d.inheritable) != 0)
      return -EPERM;
  return 0;
}

} // namespace allox::sandbox
