// SPDX-License-Identifier: Apache-2.0
#include "daemon/options.hpp"

#include "messages/ids.hpp"

#include <CLI/CLI.hpp>

#include <cstdlib>

namespace allox::daemon {

int parse(int argc, char** argv, options& out) {
  CLI::App app{"Allox OS workspace daemon: agents, sessions, checkpoints and "
               "rollback over JSON RPC"};
  app.add_option("--root", out.root, "workspace store root (on Btrfs)")
      ->required();
  app.add_option("--metrics-listen", out.metrics_listen,
                 "HOST:PORT serving only GET /metrics (and /health) without "
                 "the token, e.g. for Prometheus on a private address");
  app.add_option("--listen", out.listen, "HOST:PORT to serve on")
      ->capture_default_str();
  app.add_option("--token", out.token,
                 "bearer token (default: $ALLOX_WORKSPACE_TOKEN)");
  app.add_option("--loop-image", out.loop_image,
                 "back the store with this sparse Btrfs image, created and "
                 "loop-mounted at --root if needed");
  app.add_option("--loop-size", out.loop_size, "size of a new loop image")
      ->capture_default_str();
  app.add_option("--workers", out.workers, "actor scheduler threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  int64_t idle_ms = out.idle_timeout.count();
  app.add_option("--idle-timeout-ms", idle_ms,
                 "close idle HTTP connections after this long")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{3600000}));
  int64_t header_ms = out.header_timeout.count();
  app.add_option("--header-timeout-ms", header_ms,
                 "close a connection whose request head is not complete "
                 "this long after its first byte")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{3600000}));
  int64_t body_ms = out.body_timeout.count();
  app.add_option("--body-timeout-ms", body_ms,
                 "close a connection whose request body is not complete "
                 "this long after its head")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{3600000}));
  int64_t request_ms = out.request_timeout.count();
  app.add_option("--request-timeout-ms", request_ms,
                 "answer `internal` to a request the daemon has not "
                 "finished after this long")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{86400000}));
  int64_t heartbeat_ms = out.stream_heartbeat.count();
  app.add_option("--stream-heartbeat-ms", heartbeat_ms,
                 "a live stream with nothing to send writes a comment this "
                 "often")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{3600000}));
  app.add_option("--max-connections", out.max_connections,
                 "concurrent HTTP connections")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  app.add_option("--max-upload-bytes", out.max_upload_bytes,
                 "most bytes one PUT /v1/files/... may carry (413 beyond)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 50));
  app.add_option("--max-session-upload-bytes", out.max_session_upload_bytes,
                 "most bytes the uploads in flight into one session may "
                 "carry together (413 beyond)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 50));
  int64_t sweep_ms = out.qgroup_sweep.count();
  app.add_option("--qgroup-sweep-ms", sweep_ms,
                 "how often the qgroups of deleted trees and the disk groups "
                 "of deleted sessions are removed "
                 "while the store's quotas are on")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{86400000}));
  int64_t grace_ms = out.shutdown_grace.count();
  app.add_option("--shutdown-grace-ms", grace_ms,
                 "how long shutdown waits for in-flight requests")
      ->capture_default_str();
  app.add_option("--log-level", out.log_level, "debug, info, warn or error")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  app.add_option("--process-audit-root", out.process_audit_root,
                 "directory for run state and output (outside the store); "
                 "enables process.* execution");
  app.add_option("--process-cgroup-root", out.process_cgroup_root,
                 "dedicated cgroup v2 subtree (default: <v2 mount>/allox)");
  app.add_flag("--kill-session-processes-on-rollback", out.kill_on_rollback,
               "default of kill_processes for rollbacks");
  app.add_flag("--live-restore", out.live_restore,
               "an orderly stop leaves live runs running (and the store "
               "mounted) for the next daemon to adopt");
  app.add_option("--sandbox-init", out.sandbox_init,
                 "path of allox-sandbox-init (default: next to the daemon)");
  app.add_option("--bwrap", out.bwrap, "path of the bubblewrap binary")
      ->capture_default_str();
  app.add_option("--session-network", out.session_network,
                 "default network of runs: inherit, isolated or proxy")
      ->capture_default_str()
      ->check(CLI::IsMember({"inherit", "isolated", "proxy"}));
  app.add_option("--syscall-filter", out.syscall_filter,
                 "seccomp filter of runs: default (docs/security.md) or off")
      ->capture_default_str()
      ->check(CLI::IsMember({"default", "off"}));
  app.add_option("--sandbox-user", out.sandbox_user,
                 "who runs execute as: a user name, UID:GID, or root "
                 "(the prototype's uid 0 without capabilities)")
      ->capture_default_str();
  app.add_option("--connect-guard", out.connect_guard,
                 "keep runs from connecting to the daemon's own addresses "
                 "(a BPF cgroup program; docs/security.md): on or off")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--deny-connect", out.deny_connect,
                 "a further destination runs may never connect to: "
                 "ADDR:PORT or ADDR:* (IPv6 in brackets); repeatable");
  app.add_option("--run-memory-max", out.run_memory_max,
                 "default memory.max of a session's runs");
  app.add_option("--run-pids-max", out.run_pids_max,
                 "default pids.max of a session's runs");
  app.add_option("--run-cpu-max", out.run_cpu_max,
                 "default cpu.max of a session's runs");
  app.add_option("--session-limits", out.session_limits,
                 "a default limit of every session, FILE=VALUE (the cgroup "
                 "files memory.max, memory.high, pids.max, cpu.max, "
                 "cpu.weight, io.max, io.weight, and disk.max, the "
                 "workspace's share of the store); repeatable, and "
                 "session.configure overrides it file by file");
  app.add_flag("--store-quotas", out.store_quotas,
               "turn Btrfs quota groups on for the store (kept by Btrfs), "
               "so that disk.max limits a session's workspace");
  app.add_option("--process-tracking", out.process_tracking,
                 "process tracking of runs: disabled or ebpf (needs "
                 "--process-audit-root, root and a kernel with BTF)")
      ->capture_default_str()
      ->check(CLI::IsMember({"disabled", "ebpf"}));
  app.add_option("--write-provenance", out.write_provenance,
                 "with ebpf tracking, record which process of a run "
                 "changed which file (costs every system call that may "
                 "write a hook; docs/benchmarks.md)")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--tracker-ring-bytes", out.tracker_ring_bytes,
                 "size of the process tracker's ring buffer (a power of "
                 "two, at least 4096)")
      ->capture_default_str()
      ->check([](const std::string& v) -> std::string {
        try {
          auto n = std::stoull(v);
          if (n >= 4096 && n <= (uint64_t{1} << 30) && (n & (n - 1)) == 0)
            return {};
        } catch (...) {
        }
        return "must be a power of two from 4096 to 1073741824";
      });
  app.add_option("--e2b", out.e2b,
                 "the E2B-compatible API under /e2b (docs/e2b.md): on or off")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--e2b-agent", out.e2b_agent,
                 "the agent of E2B sandboxes whose metadata names none "
                 "(allox.agent)")
      ->capture_default_str()
      ->check([](const std::string& v) -> std::string {
        return is_valid_id(v) ? std::string{} : "must be a valid agent id";
      });
  app.add_option("--mcp", out.mcp,
                 "the MCP server at /mcp (docs/mcp.md): on or off")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--mcp-agent", out.mcp_agent,
                 "the agent of sessions an MCP tool names without one")
      ->capture_default_str()
      ->check([](const std::string& v) -> std::string {
        return is_valid_id(v) ? std::string{} : "must be a valid agent id";
      });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  out.idle_timeout = std::chrono::milliseconds{idle_ms};
  out.header_timeout = std::chrono::milliseconds{header_ms};
  out.body_timeout = std::chrono::milliseconds{body_ms};
  out.request_timeout = std::chrono::milliseconds{request_ms};
  out.stream_heartbeat = std::chrono::milliseconds{heartbeat_ms};
  out.shutdown_grace = std::chrono::milliseconds{grace_ms};
  out.qgroup_sweep = std::chrono::milliseconds{sweep_ms};
  if (out.token.empty())
    if (const char* env = std::getenv("ALLOX_WORKSPACE_TOKEN"))
      out.token = env;
  return -1;
}

} // namespace allox::daemon
