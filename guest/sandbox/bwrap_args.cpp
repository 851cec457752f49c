// SPDX-License-Identifier: Apache-2.0
#include "guest/sandbox/bwrap_args.hpp"

namespace allox::sandbox {

std::vector<std::string> bwrap_argv(const spec& s) {
  // No --die-with-parent: a run outlives a daemon that dies, and the
  // restarted daemon adopts it (actors/session/adoption.cpp). What ends
  // runs is their cgroup: killed by the session, the daemon's orderly
  // stop, or start-up for runs it cannot adopt.
  std::vector<std::string> a{s.bwrap,
                             // setsid: no controlling terminal, so no
                             // TIOCSTI into the caller's terminal.
                             "--new-session", "--unshare-pid", "--unshare-ipc",
                             "--unshare-uts"};
  if (s.isolated_network)
    a.push_back("--unshare-net"); // only loopback inside
  for (const auto* x :
       {"--tmpfs", "/",    "--ro-bind", "/usr",      "/usr",   "--symlink",
        "usr/bin", "/bin", "--symlink", "usr/sbin",  "/sbin",  "--symlink",
        "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--ro-bind",
        "/etc",    "/etc", "--dev",     "/dev",      "--proc", "/proc"})
    a.emplace_back(x);
  a.insert(a.end(), {"--bind", s.current, "/workspace", "--dir", "/agent",
                     "--bind", s.shared, "/agent/shared",
                     // Writable by the sandbox user, as a /tmp is.
                     "--perms", "1777", "--tmpfs", "/tmp", "--dir",
                     "/run/allox", "--ro-bind", s.init, init_path});
  // The same tree, not a copy: what the run writes under its home is the
  // workspace checkpoints and rollback see.
  if (!s.home.empty())
    a.insert(a.end(), {"--perms", "0755", "--dir", "/home", "--bind", s.current,
                       s.home});
  // The event endpoint (guest/http/event_endpoint.hpp) and its clients.
  if (!s.events_socket.empty())
    a.insert(a.end(), {"--ro-bind", s.events_socket, events_socket_path});
  bool connector = s.proxy_network && !s.network_client.empty();
  if (!s.turn_client.empty() || !s.share_client.empty() || connector)
    a.insert(a.end(), {"--dir", "/run/allox/bin"});
  if (connector)
    a.insert(a.end(),
             {"--ro-bind", s.network_client, "/run/allox/bin/allox-network"});
  if (!s.turn_client.empty())
    a.insert(a.end(),
             {"--ro-bind", s.turn_client, "/run/allox/bin/allox-turn"});
  if (!s.share_client.empty())
    a.insert(a.end(),
             {"--ro-bind", s.share_client, "/run/allox/bin/allox-share"});
  // Nothing but /workspace, /agent/shared and /tmp is writable: the root
  // and /dev tmpfs become read-only once everything is mounted (so no
  // /dev/shm either).
  a.insert(a.end(), {"--remount-ro", "/", "--remount-ro", "/dev", "--cap-drop",
                     "ALL", "--clearenv"});
  // Our init needs these three to become the sandbox user, and spends
  // them doing so before anything of the run starts (identity.hpp).
  if (s.uid != 0)
    for (const auto* cap : {"CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"})
      a.insert(a.end(), {"--cap-add", cap});
  // The caller's variables first: the fixed ones below come later and win.
  for (const auto& [k, v] : s.env)
    a.insert(a.end(), {"--setenv", k, v});
  const std::pair<const char*, std::string> fixed[] = {
      {"PATH", "/usr/local/bin:/usr/bin:/bin"},
      {"HOME", "/workspace"},
      {"TMPDIR", "/tmp"},
      {"ALLOX_AGENT_ID", s.agent_id},
      {"ALLOX_AGENT_WORKSPACE", "/agent"},
      {"ALLOX_AGENT_SHARED", "/agent/shared"},
      {"ALLOX_SESSION_ID", s.session_id},
  };
  for (const auto& [k, v] : fixed)
    a.insert(a.end(), {"--setenv", k, v});
  if (!s.home.empty())
    a.insert(a.end(), {"--setenv", "HOME", s.home, "--setenv", "USER",
                       s.home.substr(s.home.rfind('/') + 1)});
  if (!s.events_socket.empty())
    a.insert(a.end(), {"--setenv", "ALLOX_EVENTS_SOCKET", events_socket_path});
  // Proxy mode (guest/net/): every HTTP(S) client that honours these goes
  // through the broker; loopback stays the sandbox's own.
  if (s.proxy_network)
    for (const auto* k :
         {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
      a.insert(a.end(), {"--setenv", k, "http://127.0.0.1:3128"});
  if (s.proxy_network)
    for (const auto* k : {"NO_PROXY", "no_proxy"})
      a.insert(a.end(), {"--setenv", k, "127.0.0.1,localhost,::1"});
  // Our init is PID 1: it reaps orphans and stays until every process of
  // the run has exited, so double-forked and setsid descendants keep the
  // run (and the namespace) alive.
  auto cwd = !s.cwd.empty() ? s.cwd : !s.home.empty() ? s.home : "/workspace";
  a.insert(a.end(), {"--chdir", cwd, "--as-pid-1", init_path});
  if (!s.syscall_filter)
    a.emplace_back("--no-syscall-filter");
  if (s.report_status)
    a.insert(a.end(), {"--status-fd", std::to_string(status_fd_number)});
  if (s.uid != 0)
    a.insert(a.end(),
             {"--uid", std::to_string(s.uid), "--gid", std::to_string(s.gid)});
  a.emplace_back("--");
  a.insert(a.end(), s.argv.begin(), s.argv.end());
  return a;
}

} // namespace allox::sandbox
