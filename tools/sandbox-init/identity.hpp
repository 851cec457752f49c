// SPDX-License-Identifier: Apache-2.0
// Who a run's programs are: allox-sandbox-init becomes the sandbox user
// before anything of the run happens. Bubblewrap starts it as root with
// only CAP_SETUID, CAP_SETGID and CAP_SETPCAP; become() spends them and
// leaves an unprivileged process: no supplementary groups, an empty
// bounding set, no ambient capabilities, no_new_privs.
#pragma once

#include <sys/types.h>

namespace allox::sandbox {

/// Becomes uid:gid for good. 0 on success, else -errno of the step that
/// failed; the caller must not run anything then.
int become(uid_t uid, gid_t gid);

} // namespace allox::sandbox
