// SPDX-License-Identifier: Apache-2.0
// allox-workspace-daemon: start-up order, the libuv loop, signals and a
// clean shutdown.
//
//   parse -> token rules -> (loop image) -> Btrfs check -> catalog ->
//   actor system -> reconcile + spawn (before serving) -> listen -> serve
//   SIGINT/SIGTERM: stop accepting -> drain in-flight -> stop actors ->
//   close catalog -> unmount what we mounted.
#include "actors/supervisor.hpp"
#include "daemon/destinations.hpp"
#include "daemon/options.hpp"
#include "guest/http/event_endpoint.hpp"
#include "guest/http/server.hpp"
#include "guest/log.hpp"
#include "guest/net/broker.hpp"
#include "guest/os/btrfs.hpp"
#include "guest/os/fs.hpp"
#include "guest/os/loop_mount.hpp"
#if ALLOX_TRACKING
#include "bpf/connect_guard.hpp"
#include "tracking/readiness.hpp"
#endif
#include "messages/type_ids.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

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

/// State of the loop thread's shutdown sequence.
struct loop_context {
  http::server* server = nullptr;
  /// The in-guest event endpoint, with tracked execution.
  http::event_endpoint* endpoint = nullptr;
  caf::actor_system* system = nullptr;
  rpc_actor rpc;
  uv_signal_t sigint{}, sigterm{}, sigusr1{};
  uv_timer_t drain{};
  uv_async_t fatal{};
  std::chrono::steady_clock::time_point drain_deadline;
  std::chrono::milliseconds grace{10000};
  bool stopping = false;
  int exit_code = 0;
};

void finish_loop(loop_context* ctx) {
  uv_timer_stop(&ctx->drain);
  ctx->server->close();
  if (ctx->endpoint != nullptr)
    ctx->endpoint->close();
  for (auto* h : {reinterpret_cast<uv_handle_t*>(&ctx->sigint),
                  reinterpret_cast<uv_handle_t*>(&ctx->sigterm),
                  reinterpret_cast<uv_handle_t*>(&ctx->sigusr1),
                  reinterpret_cast<uv_handle_t*>(&ctx->drain),
                  reinterpret_cast<uv_handle_t*>(&ctx->fatal)})
    if (!uv_is_closing(h))
      uv_close(h, nullptr);
}

void begin_shutdown(loop_context* ctx, const char* why) {
  if (ctx->stopping)
    return;
  ctx->stopping = true;
  log::info("daemon", std::string{"shutting down ("} + why +
                          "): no new connections, draining requests");
  ctx->server->stop_accepting();
  ctx->drain_deadline = std::chrono::steady_clock::now() + ctx->grace;
  uv_timer_start(
      &ctx->drain,
      [](uv_timer_t* t) {
        auto* c = static_cast<loop_context*>(t->data);
        if (c->server->in_flight() == 0 ||
            std::chrono::steady_clock::now() >= c->drain_deadline) {
          if (c->server->in_flight() > 0)
            log::warn("daemon", std::to_string(c->server->in_flight()) +
                                    " request(s) still running at shutdown");
          finish_loop(c);
        }
      },
      0, 20);
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
  cfg->default_network = opts.session_network;
  cfg->syscall_filter = opts.syscall_filter != "off";
  auto user = sandbox_user(opts.sandbox_user);
  if (!user)
    return user.error();
  std::tie(cfg->sandbox_uid, cfg->sandbox_gid) = *user;
  for (const auto& [file, value] :
       {std::pair<std::string, std::string>{"memory.max", opts.run_memory_max},
        {"pids.max", opts.run_pids_max},
        {"cpu.max", opts.run_cpu_max}}) {
    if (value.empty())
      continue;
    if (auto err = check_limit(*cfg, file, value))
      return err;
    cfg->default_limits[file] = value;
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

/// Everything between mounting and unmounting the store; returns the exit
/// code so that main() always unmounts what it mounted.
int serve(const daemon::options& opts,
          const std::pair<std::string, uint16_t>& listen_on,
          const std::string& root, os::loop_mount* loop) {
  auto fail = [](const std::string& msg) {
    log::error("daemon", msg);
    std::cerr << "allox-workspace-daemon: " << msg << std::endl;
    return 1;
  };
  const auto* listen = &listen_on;
  if (auto err = os::require_btrfs(root))
    return fail(message_of(err));
  store::layout paths{absolute(root)};
  if (auto err = os::ensure_managed_dir(paths.metadata_dir(), 0700,
                                        "metadata directory"))
    return fail(message_of(err));
  std::shared_ptr<const exec_config> exec;
  if (opts.process_tracking == "ebpf") {
    if (auto err = check_tracking(opts))
      return fail(*err);
  }
  if (!opts.process_audit_root.empty()) {
    auto made = make_exec_config(opts, paths);
    if (!made)
      return fail(message_of(made.error()));
    exec = std::move(*made);
  }
  daemon::guard_handle guard;
  if (exec) {
    auto attached = daemon::guard_connections(opts, exec->cgroups.root());
    if (!attached)
      return fail(message_of(attached.error()));
    guard = std::move(*attached);
  } else if (opts.kill_on_rollback) {
    return fail("process audit root is required when Session execution "
                "features are enabled");
  }
  auto catalog = store::catalog::open(paths.database());
  if (!catalog)
    return fail(message_of(catalog.error()));
  auto shared_catalog = std::make_shared<store::catalog>(std::move(*catalog));

  uv_loop_t uv;
  uv_loop_init(&uv);
  loop_context ctx;
  ctx.grace = opts.shutdown_grace;
  http::server_options sopts;
  sopts.host = listen->first;
  sopts.port = listen->second;
  sopts.token = opts.token;
  sopts.idle_timeout = opts.idle_timeout;
  sopts.header_timeout = opts.header_timeout;
  sopts.body_timeout = opts.body_timeout;
  sopts.stream_heartbeat_ms =
      static_cast<uint64_t>(opts.stream_heartbeat.count());
  sopts.max_connections = opts.max_connections;
  sopts.max_upload = opts.max_upload_bytes;
  sopts.max_session_upload = opts.max_session_upload_bytes;
  if (!opts.metrics_listen.empty()) {
    auto m = http::parse_listen(opts.metrics_listen);
    if (!m)
      return fail(message_of(m.error()));
    sopts.metrics_host = m->first;
    sopts.metrics_port = m->second;
  }
  // Declared before the actor system so it outlives every actor that may
  // still post a reply.
  http::server server{
      &uv, sopts,
      [&ctx](uint64_t ticket, std::string action, json::object params) {
        caf::anon_send(ctx.rpc, atom::rpc_v, ticket, std::move(action),
                       json::value(std::move(params)));
      },
      [&ctx](stream_request req) {
        caf::anon_send(ctx.rpc, std::move(req));
      }};
  server.set_transfer([&ctx](transfer_request req) {
    caf::anon_send(ctx.rpc, std::move(req));
  });
  ctx.server = &server;
  uv_async_init(&uv, &ctx.fatal, [](uv_async_t* a) {
    auto* c = static_cast<loop_context*>(a->data);
    c->exit_code = 1;
    begin_shutdown(c, "core actor failure");
  });
  ctx.fatal.data = &ctx;

  caf::actor_system_config cfg;
  add_message_types(cfg);
  cfg.set("scheduler.max-threads", opts.workers);
  // CAF's idle workers poll their queues in a loop of 50 us sleeps for
  // tens of milliseconds before waiting on a condition variable. Each
  // request leaves them polling through the Btrfs work it starts, and on
  // a guest with two vCPUs that polling takes CPU time from the kernel
  // threads writing the data out (measured: a fifth of a CPU during a
  // burst of checkpoints). Enqueuing wakes a waiting worker anyway, so
  // go from the short spin straight to waiting.
  cfg.set("work-stealing.moderate-poll-attempts", size_t{0});
  caf::actor_system system{cfg};
  ctx.system = &system;

  json::object info{{"pid", static_cast<int64_t>(::getpid())},
                    {"root", paths.root},
                    {"listen", opts.listen},
                    {"loop_device", loop ? loop->device() : ""},
                    {"workers", opts.workers}};
  auto sup = system.spawn(
      supervisor,
      supervisor_init{paths, shared_catalog, &server, info, exec,
                      [&ctx](std::string) { uv_async_send(&ctx.fatal); },
                      opts.request_timeout});
  shared_catalog.reset();

  // Reconcile and spawn every agent and session before serving. The
  // scoped actor lives only in this block, on the main thread, and is
  // gone before the loop runs.
  std::string startup_error;
  {
    caf::scoped_actor self{system};
    auto started = std::chrono::steady_clock::now();
    agents_actor agents;
    auto on_error = [&](caf::error& err) {
      startup_error = message_of(err);
    };
    self->request(sup, std::chrono::seconds{10}, atom::agent_v)
        .receive([&](agents_actor& a) { agents = a; }, on_error);
    self->request(sup, std::chrono::seconds{10}, atom::rpc_v)
        .receive([&](rpc_actor& r) { ctx.rpc = r; }, on_error);
    if (startup_error.empty())
      self->request(agents, std::chrono::minutes{10}, atom::load_v)
          .receive(
              [&](json::value& summary) {
                auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - started)
                              .count();
                log::info("daemon", "store ready in " + std::to_string(ms) +
                                        " ms: " + json::serialize(summary));
              },
              [&](caf::error& err) {
                startup_error = "start-up recovery failed: " + message_of(err);
              });
  }
  // Runs reach the daemon through the event endpoint only
  // (guest/http/event_endpoint.hpp); it serves before the first run can.
  std::optional<http::event_endpoint> endpoint;
  if (exec && startup_error.empty()) {
    auto rel = exec->cgroups.root().substr(exec->cgroups.mount().size());
    endpoint.emplace(&uv, &server, exec->events_socket, rel);
    if (auto err = endpoint->listen())
      startup_error = message_of(err);
    else
      ctx.endpoint = &*endpoint;
  }
  if (startup_error.empty())
    if (auto err = server.listen())
      startup_error = message_of(err);
  if (!startup_error.empty()) {
    ctx.rpc = nullptr;
    caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
    system.await_all_actors_done();
    sup = nullptr;
    server.close();
    if (ctx.endpoint != nullptr)
      ctx.endpoint->close();
    uv_close(reinterpret_cast<uv_handle_t*>(&ctx.fatal), nullptr);
    uv_run(&uv, UV_RUN_DEFAULT);
    uv_loop_close(&uv);
    return fail(startup_error);
  }
  auto where =
      (listen->first.find(':') != std::string::npos ? "[" + listen->first + "]"
                                                    : listen->first) +
      ":" + std::to_string(server.port());
  log::info("daemon", "serving on http://" + where + "/v1/rpc" +
                          (opts.token.empty() ? "" : " (token required)"));

  for (auto* sig : {&ctx.sigint, &ctx.sigterm, &ctx.sigusr1}) {
    uv_signal_init(&uv, sig);
    sig->data = &ctx;
  }
  uv_signal_start(
      &ctx.sigint,
      [](uv_signal_t* s, int) {
        begin_shutdown(static_cast<loop_context*>(s->data), "SIGINT");
      },
      SIGINT);
  uv_signal_start(
      &ctx.sigterm,
      [](uv_signal_t* s, int) {
        begin_shutdown(static_cast<loop_context*>(s->data), "SIGTERM");
      },
      SIGTERM);
  uv_signal_start(
      &ctx.sigusr1,
      [](uv_signal_t* s, int) {
        caf::anon_send(static_cast<loop_context*>(s->data)->rpc, atom::log_v);
      },
      SIGUSR1);
  uv_timer_init(&uv, &ctx.drain);
  ctx.drain.data = &ctx;

  uv_run(&uv, UV_RUN_DEFAULT);

  ctx.rpc = nullptr;
  // The handle stays until every actor is done: the supervisor stops its
  // children in order (docs/architecture.md, "Shutdown"), and an actor
  // nobody references any more would be killed as unreachable, cutting
  // that order short.
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  system.await_all_actors_done();
  sup = nullptr;
  uv_run(&uv, UV_RUN_NOWAIT);
  uv_loop_close(&uv);
  return ctx.exit_code;
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
  int exit_code = serve(opts, *listen, root, loop ? &*loop : nullptr);
  if (loop) {
    if (auto err = loop->unmount())
      log::error("daemon", "unmount failed: " + message_of(err));
    else
      log::info("daemon", "store unmounted");
  }
  log::info("daemon", "stopped");
  return exit_code;
}
