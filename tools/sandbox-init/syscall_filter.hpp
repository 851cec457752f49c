// SPDX-License-Identifier: Apache-2.0
// The seccomp filter of a run: system calls an agent never needs and that
// escapes commonly use are refused with EPERM (docs/security.md lists each
// and why). Installed by allox-sandbox-init in the run's first process,
// before it executes the target; every descendant inherits it.
#pragma once

namespace allox::sandbox {

/// Loads the filter into the calling thread (and so its descendants).
/// Returns 0, or a negative errno from libseccomp.
int install_syscall_filter();

} // namespace allox::sandbox
