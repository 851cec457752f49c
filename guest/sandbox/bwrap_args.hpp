// SPDX-License-Identifier: Apache-2.0
// The Bubblewrap command line of a run: the prototype's sandbox (reference
// 6.2) plus IPC/UTS namespaces, an optional private network namespace, our
// init as the namespace's PID 1, and fixed variables that the caller's env
// cannot override.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace allox::sandbox {

/// Where the event endpoint's socket is bound inside the sandbox.
inline constexpr const char* events_socket_path = "/run/allox/events.sock";

/// Where our init is mounted inside the sandbox.
inline constexpr const char* init_path = "/run/allox/init";

/// The descriptor our init writes the run's final status to (the run's
/// `exit` file), when the spawn passes one (spawn.hpp).
inline constexpr int status_fd_number = 3;

struct spec {
  std::string bwrap = "/usr/bin/bwrap";
  std::string init;    // host path of allox-sandbox-init
  std::string current; // host path of the session's current/
  std::string shared;  // host path of the agent's shared/
  std::string agent_id;
  std::string session_id;
  std::map<std::string, std::string> env; // the caller's
  bool isolated_network = false;
  /// Proxy mode: the run starts inside the session's namespace (no
  /// --unshare-net) with the proxy variables set.
  bool proxy_network = false;
  /// The run's seccomp filter (--syscall-filter default).
  bool syscall_filter = true;
  /// The event endpoint and its clients (empty: none), bound read-only.
  std::string events_socket;
  std::string turn_client;
  std::string share_client;
  /// Proxy mode's TCP connector (bound only with proxy_network).
  std::string network_client;
  /// The sandbox user; 0:0 keeps the prototype's uid 0 (no capabilities).
  uid_t uid = 0;
  gid_t gid = 0;
  /// Where the run starts (empty: `home`, else /workspace).
  std::string cwd;
  /// /home/<user>: the workspace bound there too, HOME and USER naming it.
  std::string home;
  std::vector<std::string> argv;
  /// Our init writes the final status to fd status_fd_number.
  bool report_status = false;
};

/// bwrap <options> /run/allox/init -- <argv...>
std::vector<std::string> bwrap_argv(const spec& s);

} // namespace allox::sandbox
