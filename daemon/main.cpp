// SPDX-License-Identifier: Apache-2.0
// allox-workspace-daemon: start-up order, the libuv loop, signals and a
// clean shutdown.
//
//   parse -> token rules -> (loop image) -> Btrfs check -> catalog ->
//   actor system -> reconcile + spawn (before serving) -> listen -> serve
//   SIGINT/SIGTERM: stop accepting -> drain in-flight -> stop actors ->
//   close catalog -> unmount what we mounted.
// What runs between the catalog and the unmount is daemon/runtime.hpp.
#include "daemon/destinations.hpp"
#include "daemon/options.hpp"
#include "daemon/runtime.hpp"
#include "guest/http/server.hpp"
#include "guest/log.hpp"
#include "guest/net/broker.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/btrfs_quota.hpp"
#include "guest/os/fs.hpp"
#include "guest/os/loop_mount.hpp"
#if ALLOX_TRACKING
#include "bpf/connect_guard.hpp"
#include "tracking/readiness.hpp"
#endif

#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <pwd.h>
#include <sys/resource.h>
#include <tuple>
#include <unistd.h>

using namespace allox;

namespace {

[[noreturn]] void die(const std::string& msg) {
  log::error("daemon", msg);
  std::cerr << "allox-workspace-daemon: " << msg << std::endl;
  std::exit(1);
}

std::string absolute(const std::string& p) {
  char buf[PATH_MAX];
  if (realpath(p.c_str(), buf) != nullptr)
    return buf;
  if (!p.empty() && p.front() == '/')
    return p;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr)
    return p;
  return std::string{cwd} + "/" + p;
}

log::level level_from(const std::string& s) {
  if (s == "debug")
    return log::level::debug;
  if (s == "warn")
    return log::level::warn;
  if (s == "error")
    return log::level::error;
  return log::level::info;
}

/// The uid and gid of --sandbox-user: a user name, UID:GID or root.
expected<std::pair<uid_t, gid_t>> sandbox_user(const std::string& text) {
  if (text == "root")
    return std::pair<uid_t, gid_t>{0, 0};
  unsigned long uid = 0;
  unsigned long gid = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lu:%lu%c", &uid, &gid, &tail) == 2)
    return std::pair{static_cast<uid_t>(uid), static_cast<gid_t>(gid)};
  if (auto* pw = ::getpwnam(text.c_str()))
    return std::pair{pw->pw_uid, pw->pw_gid};
  return make_error(errc::invalid_argument,
                    "sandbox user " + text +
                        " does not exist: create it (scripts/install-deps.sh "
                        "does: useradd --system allox-sandbox) or pass "
                        "--sandbox-user UID:GID");
}

/// Tracked execution from the flags: audit root outside the store, the
/// cgroup subtree, our sandbox init and bwrap.
expected<std::shared_ptr<const exec_config>>
make_exec_config(const daemon::options& opts, const store::layout& paths) {
  auto cfg = std::make_shared<exec_config>();
  cfg->audit_root = absolute(opts.process_audit_root);
  if (cfg->audit_root == paths.root ||
      cfg->audit_root.rfind(paths.root + "/", 0) == 0)
    return make_error(errc::invalid_argument,
                      "process audit directory must be outside the "
                      "workspace store");
  if (auto err = os::ensure_managed_dir(cfg->audit_root, 0700,
                                        "process audit directory"))
    return err;
  auto tree = os::cgroup_tree::open(opts.process_cgroup_root);
  if (!tree)
    return tree.error();
  cfg->cgroups = std::move(*tree);
  cfg->store_devices = os::block_devices(paths.root);
  // disk.max is a qgroup limit: enforced whenever the store's quotas are
  // on, which Btrfs remembers once they were turned on. Simple quotas
  // where the kernel has them: only they count checkpoints in the share.
  if (opts.store_quotas)
    if (auto err = os::enable_quotas(paths.root, true))
      return err;
  cfg->store_quotas = os::quotas_enabled(paths.root);
  cfg->store_simple_quotas =
      os::quotas_mode(paths.root) == os::quota_mode::simple;
  cfg->store_bytes = os::filesystem_bytes(paths.root);
  // Run logs beside the store on its disk (the guest's data disk) count
  // against the sessions' shares too (guest/store/run_output.hpp).
  cfg->output_subvolumes =
      cfg->store_quotas && os::same_btrfs(cfg->audit_root, paths.root);
  cfg->init_path = opts.sandbox_init;
  if (cfg->init_path.empty()) {
    char self_path[PATH_MAX];
    auto n = ::readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
    if (n > 0) {
      self_path[n] = '\0';
      std::string dir{self_path};
      dir = dir.substr(0, dir.rfind('/'));
      for (auto candidate : {dir + "/allox-sandbox-init",
                             dir + "/../libexec/allox/allox-sandbox-init"})
        if (::access(candidate.c_str(), X_OK) == 0) {
          cfg->init_path = absolute(candidate);
          break;
        }
    }
  }
  if (cfg->init_path.empty() || ::access(cfg->init_path.c_str(), X_OK) != 0)
    return make_error(errc::invalid_argument,
                      "allox-sandbox-init not found; pass --sandbox-init");
  cfg->events_socket = cfg->audit_root + "/events.sock";
  // The tools bound into runs (allox-turn and allox-share, the event
  // endpoint's clients, and proxy mode's allox-network): next to the init.
  auto dir = cfg->init_path.substr(0, cfg->init_path.rfind('/'));
  for (auto [name, into] : {std::pair{"/allox-turn", &cfg->turn_client},
                            std::pair{"/allox-share", &cfg->share_client},
                            std::pair{"/allox-network", &cfg->network_client}})
    if (::access((dir + name).c_str(), X_OK) == 0)
      *into = dir + name;
  cfg->bwrap_path = opts.bwrap;
  if (::access(cfg->bwrap_path.c_str(), X_OK) != 0)
    return make_error(errc::invalid_argument,
                      "bubblewrap not found at " + cfg->bwrap_path);
  cfg->kill_on_rollback = opts.kill_on_rollback;
  cfg->live_restore = opts.live_restore;
  cfg->default_network = opts.session_network;
  cfg->syscall_filter = opts.syscall_filter != "off";
  auto user = sandbox_user(opts.sandbox_user);
  if (!user)
    return user.error();
  std::tie(cfg->sandbox_uid, cfg->sandbox_gid) = *user;
  limit_list defaults{{"memory.max", opts.run_memory_max},
                      {"pids.max", opts.run_pids_max},
                      {"cpu.max", opts.run_cpu_max}};
  for (const auto& entry : opts.session_limits) {
    auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0)
      return make_error(errc::invalid_argument,
                        "--session-limits takes FILE=VALUE, not " + entry);
    defaults.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
  }
  // A limit the machine cannot enforce refuses the start, naming the
  // controller: a default that silently did nothing would be worse.
  for (const auto& [file, value] : defaults) {
    if (value.empty())
      continue;
    if (auto err = check_limit(*cfg, file, value))
      return err;
    set_limit(cfg->default_limits, file, value);
  }
  // The egress broker of proxy-mode sessions: its loop thread idles until
  // the first proxy run (guest/net/broker.hpp).
  auto never = daemon::daemon_destinations(opts);
  if (!never)
    return never.error();
  auto broker = net::broker::start(std::move(*never));
  if (!broker)
    return broker.error();
  cfg->broker = std::move(*broker);
  cfg->tracking = opts.process_tracking;
  cfg->tracker_ring_bytes = opts.tracker_ring_bytes;
  cfg->write_provenance = opts.write_provenance == "on";
  std::ifstream boot{"/proc/sys/kernel/random/boot_id"};
  std::getline(boot, cfg->boot_id);
  log::info("daemon", "tracked execution: runs in " + cfg->audit_root +
                          ", cgroups under " + cfg->cgroups.root());
  return std::shared_ptr<const exec_config>{std::move(cfg)};
}

/// The readiness checks of process tracking (tracking/readiness.hpp);
/// a message naming what is missing, or none when the guest is ready.
std::optional<std::string> check_tracking(const daemon::options& opts) {
#if ALLOX_TRACKING
  tracking::readiness_options ro;
  ro.cgroup_root = opts.process_cgroup_root;
  ro.bwrap = opts.bwrap;
  auto report = tracking::check_readiness(ro);
  if (report.ready) {
    log::info("daemon", "process tracking: ebpf (readiness checks passed)");
    return std::nullopt;
  }
  std::string missing;
  for (const auto& c : report.checks)
    if (!c.ok)
      missing += (missing.empty() ? "" : "; ") + c.name + ": " + c.detail;
  return "process tracking (ebpf) is not available on this guest: " + missing;
#else
  (void)opts;
  return std::string{"process tracking (ebpf) is not built into this daemon"};
#endif
}

/// Checks the store and opens what the actors need, in order: the Btrfs
/// check, the metadata directory, process tracking's readiness, tracked
/// execution, the connect guard, the catalog.
expected<daemon::store_setup> open_store(const daemon::options& opts,
                                         const std::string& root) {
  if (auto err = os::require_btrfs(root))
    return err;
  daemon::store_setup setup;
  setup.paths = store::layout{absolute(root)};
  if (auto err = os::ensure_managed_dir(setup.paths.metadata_dir(), 0700,
                                        "metadata directory"))
    return err;
  if (opts.process_tracking == "ebpf") {
    if (auto missing = check_tracking(opts))
      return make_error(errc::invalid_argument, *missing);
  }
  if (!opts.process_audit_root.empty()) {
    auto made = make_exec_config(opts, setup.paths);
    if (!made)
      return made.error();
    setup.exec = std::move(*made);
  }
  if (setup.exec) {
    auto attached = daemon::guard_connections(opts, setup.exec->cgroups.root());
    if (!attached)
      return attached.error();
    setup.guard = std::move(*attached);
  } else if (opts.kill_on_rollback) {
    return make_error(errc::invalid_argument,
                      "process audit root is required when Session execution "
                      "features are enabled");
  }
  auto catalog = store::catalog::open(setup.paths.database());
  if (!catalog)
    return catalog.error();
  setup.catalog = std::make_shared<store::catalog>(std::move(*catalog));
  return setup;
}

/// The HTTP server's settings from the flags.
expected<http::server_options>
server_options(const daemon::options& opts,
               const std::pair<std::string, uint16_t>& listen) {
  http::server_options sopts;
  sopts.host = listen.first;
  sopts.port = listen.second;
  sopts.token = opts.token;
  sopts.idle_timeout = opts.idle_timeout;
  sopts.header_timeout = opts.header_timeout;
  sopts.body_timeout = opts.body_timeout;
  sopts.max_connections = opts.max_connections;
  sopts.max_upload = opts.max_upload_bytes;
  sopts.max_session_upload = opts.max_session_upload_bytes;
  if (!opts.metrics_listen.empty()) {
    auto m = http::parse_listen(opts.metrics_listen);
    if (!m)
      return m.error();
    sopts.metrics_host = m->first;
    sopts.metrics_port = m->second;
  }
  return sopts;
}

/// Everything between mounting and unmounting the store; returns the exit
/// code so that main() always unmounts what it mounted.
int serve(const daemon::options& opts,
          const std::pair<std::string, uint16_t>& listen,
          const std::string& root, os::loop_mount* loop, bool& left_runs) {
  auto fail = [](const std::string& msg) {
    log::error("daemon", msg);
    std::cerr << "allox-workspace-daemon: " << msg << std::endl;
    return 1;
  };
  auto setup = open_store(opts, root);
  if (!setup)
    return fail(message_of(setup.error()));
  auto sopts = server_options(opts, listen);
  if (!sopts)
    return fail(message_of(sopts.error()));
  daemon::runtime daemon{opts, std::move(*sopts), std::move(*setup),
                         loop ? loop->device() : ""};
  if (auto err = daemon.start()) {
    daemon.stop();
    left_runs = daemon.left_runs();
    return fail(message_of(err));
  }
  int code = daemon.serve();
  left_runs = daemon.left_runs();
  return code;
}

} // namespace

int main(int argc, char** argv) {
  daemon::options opts;
  if (int rc = daemon::parse(argc, argv, opts); rc >= 0)
    return rc;
  log::set_threshold(level_from(opts.log_level));
  // A peer that goes away mid-write (an RPC client, either end of a
  // proxied connection) is an EPIPE for the one connection, not the end
  // of the daemon. Runs start with every disposition back at its default
  // (guest/sandbox/spawn.cpp).
  std::signal(SIGPIPE, SIG_IGN);
  // Every proxied connection holds eight descriptors (two sockets, their
  // relay duplicates, two pipes); the soft limit of a service is often
  // 1,024 where the hard one is far higher.
  if (rlimit nofile{}; ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 &&
                       nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  if (opts.process_tracking == "ebpf" && opts.process_audit_root.empty())
    die("--process-tracking ebpf needs --process-audit-root");

  auto listen = http::parse_listen(opts.listen);
  if (!listen)
    die(message_of(listen.error()));
  if (!http::is_loopback_host(listen->first) && opts.token.empty())
    die("a bearer token is required when listening beyond loopback");

  auto root = absolute(opts.root);
  std::optional<os::loop_mount> loop;
  if (!opts.loop_image.empty()) {
    auto size = os::parse_size(opts.loop_size);
    if (!size)
      die(message_of(size.error()));
    auto mounted = os::loop_mount::open(absolute(opts.loop_image), *size, root);
    if (!mounted)
      die(message_of(mounted.error()));
    loop.emplace(std::move(*mounted));
    log::info("daemon", "store image " + opts.loop_image + " on " +
                            loop->device() + " mounted at " + root +
                            (loop->adopted() ? " (adopted)" : ""));
    root = loop->mount_point();
  }
  bool left_runs = false;
  int exit_code =
      serve(opts, *listen, root, loop ? &*loop : nullptr, left_runs);
  // Runs left to the next daemon still use the store: it adopts the mount
  // as it does after a crash (a second mount of the image would corrupt
  // it).
  if (loop && left_runs) {
    loop->release();
    log::info("daemon", "store left mounted for the runs left running");
  } else if (loop) {
    if (auto err = loop->unmount())
      log::error("daemon", "unmount failed: " + message_of(err));
    else
      log::info("daemon", "store unmounted");
  }
  log::info("daemon", "stopped");
  return exit_code;
}
