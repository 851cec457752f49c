// SPDX-License-Identifier: Apache-2.0
// Command line of allox-workspace-daemon (prototype-compatible flags).
#pragma once

#include "messages/errors.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace allox::daemon {

struct options {
  std::string root;
  std::string listen = "127.0.0.1:8092";
  /// HOST:PORT serving only GET /metrics and /health, without the token.
  std::string metrics_listen;
  std::string token;
  std::string loop_image;
  std::string loop_size = "8G";
  size_t workers = 2;
  std::chrono::milliseconds idle_timeout{60000};
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds body_timeout{30000};
  std::chrono::milliseconds request_timeout{300000};
  std::chrono::milliseconds stream_heartbeat{15000};
  size_t max_connections = 1024;
  /// Most bytes one PUT /v1/files/... may carry.
  uint64_t max_upload_bytes = uint64_t{8} << 30;
  /// Most bytes a session's uploads in flight may carry together.
  uint64_t max_session_upload_bytes = uint64_t{16} << 30;
  std::chrono::milliseconds shutdown_grace{10000};
  std::string log_level = "info";
  /// Tracked execution is on when an audit root is given.
  std::string process_audit_root;
  std::string process_cgroup_root;
  bool kill_on_rollback = false;
  /// An orderly stop leaves live runs running for the next daemon.
  bool live_restore = false;
  std::string sandbox_init;
  std::string bwrap = "/usr/bin/bwrap";
  std::string session_network = "inherit";
  /// The seccomp filter of runs: "default" or "off".
  std::string syscall_filter = "default";
  /// Who runs execute as: a user name, UID:GID, or root.
  std::string sandbox_user = "allox-sandbox";
  /// "on": runs can never connect to the daemon's own listen addresses
  /// (bpf/connect_guard.hpp); "off" only for builds without BPF.
  std::string connect_guard = "on";
  /// More destinations runs may never connect to ("ADDR:PORT", "ADDR:*").
  std::vector<std::string> deny_connect;
  std::string run_memory_max, run_pids_max, run_cpu_max;
  /// --session-limits FILE=VALUE, repeatable: every session's default
  /// limits (the --run-* flags are the same for their file).
  std::vector<std::string> session_limits;
  /// --store-quotas: turn the store's Btrfs quotas on (disk.max needs them).
  bool store_quotas = false;
  /// How often the qgroups of dropped subvolumes are removed while the
  /// store's quotas are on (daemon/qgroup_sweep.hpp).
  std::chrono::milliseconds qgroup_sweep{5000};
  /// Process tracking of runs: "disabled" or "ebpf" (needs execution).
  std::string process_tracking = "disabled";
  /// Size of the tracker's ring buffer: a power of two, at least a page.
  uint32_t tracker_ring_bytes = 256 * 1024;
  /// "on" or "off": record which process of a run changed which file.
  std::string write_provenance = "on";
  /// The E2B-compatible front under /e2b: "on" or "off".
  std::string e2b = "on";
  /// The agent of E2B sandboxes whose metadata names none (allox.agent).
  std::string e2b_agent = "e2b";
  /// The MCP server at /mcp: "on" or "off".
  std::string mcp = "on";
  /// The agent of sessions an MCP tool names without one.
  std::string mcp_agent = "mcp";
};

/// Parses argv; returns an exit code >= 0 when the program should stop
/// (help printed or bad usage), -1 to continue.
int parse(int argc, char** argv, options& out);

} // namespace allox::daemon
