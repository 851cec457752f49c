// SPDX-License-Identifier: Apache-2.0
#include "daemon/runtime.hpp"

#include "fronts/console/console.hpp"
#include "fronts/metrics/scrape.hpp"
#include "fronts/native/front.hpp"
#include "guest/log.hpp"
#include "guest/os/cgroup.hpp"
#include "guest/os/sched.hpp"
#include "messages/results/admin_json.hpp"
#include "messages/type_ids.hpp"

#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <csignal>
#include <unistd.h>

namespace allox::daemon {

namespace {

/// Closes every handle of the loop that is still open; safe to call again
/// (a closed server, endpoint or handle is left alone).
void finish_loop(loop_context* ctx) {
  uv_timer_stop(&ctx->drain);
  if (ctx->sweep != nullptr)
    ctx->sweep->close();
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

/// Stops accepting and drains the requests in flight (up to the grace
/// period), then closes the loop's handles, which ends the loop.
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

caf::actor_system_config& configure(caf::actor_system_config& cfg,
                                    const options& opts) {
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
  return cfg;
}

} // namespace

runtime::runtime(const options& opts, http::server_options sopts,
                 store_setup setup, const std::string& loop_device)
    : opts_(opts), setup_(std::move(setup)),
      info_{{"pid", static_cast<int64_t>(::getpid())},
            {"root", setup_.paths.root},
            {"listen", opts.listen},
            {"loop_device", loop_device},
            {"workers", opts.workers},
            {"oom_score_adj", static_cast<int64_t>(os::own_oom_score_adj())}},
      host_(sopts.host), server_{&loop_.uv, std::move(sopts)},
      system_{configure(cfg_, opts)} {
  ctx_.grace = opts.shutdown_grace;
  // The RPC actor is known once the tree is up (recover()); the loop runs
  // only after that, and stops before it is forgotten.
  auto rpc = [this] {
    return ctx_.rpc;
  };
  native::stream_options stream;
  stream.heartbeat_ms = static_cast<uint64_t>(opts.stream_heartbeat.count());
  native::serve_native(server_, rpc, stream);
  fronts::serve_metrics(server_, rpc);
  fronts::serve_console(server_);
  if (opts.e2b == "on")
    e2b::serve_e2b(server_, [this] { return e2b_; });
  if (opts.mcp == "on")
    mcp::serve_mcp(server_, [this] { return mcp_; });
  ctx_.server = &server_;
  // Every handle exists from here on, so that stop() can close them all,
  // whether or not the daemon got to serve; the signals start in serve().
  uv_async_init(&loop_.uv, &ctx_.fatal, [](uv_async_t* a) {
    auto* c = static_cast<loop_context*>(a->data);
    c->exit_code = 1;
    begin_shutdown(c, "core actor failure");
  });
  ctx_.fatal.data = &ctx_;
  for (auto* sig : {&ctx_.sigint, &ctx_.sigterm, &ctx_.sigusr1}) {
    uv_signal_init(&loop_.uv, sig);
    sig->data = &ctx_;
  }
  uv_timer_init(&loop_.uv, &ctx_.drain);
  ctx_.drain.data = &ctx_;
  if (setup_.exec && setup_.exec->store_quotas) {
    sweep_.emplace(&loop_.uv, setup_.paths.root);
    ctx_.sweep = &*sweep_;
  }
}

runtime::~runtime() {
  stop();
}

caf::error runtime::recover() {
  caf::error failed;
  caf::scoped_actor self{system_};
  auto started = std::chrono::steady_clock::now();
  agents_actor agents;
  auto on_error = [&](caf::error& err) {
    failed = std::move(err);
  };
  self->request(sup_, std::chrono::seconds{10}, atom::agent_v)
      .receive([&](agents_actor& a) { agents = a; }, on_error);
  self->request(sup_, std::chrono::seconds{10}, atom::rpc_v)
      .receive([&](rpc_actor& r) { ctx_.rpc = r; }, on_error);
  if (failed)
    return make_error(code_of(failed), message_of(failed));
  self->request(agents, std::chrono::minutes{10}, atom::load_v)
      .receive(
          [&](recovery_summary& summary) {
            auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - started)
                          .count();
            log::info("daemon",
                      "store ready in " + std::to_string(ms) +
                          " ms: " + json::serialize(to_json(summary)));
          },
          [&](caf::error& err) {
            failed = make_error(code_of(err),
                                "start-up recovery failed: " + message_of(err));
          });
  return failed;
}

caf::error runtime::start() {
  supervisor_init init;
  init.paths = setup_.paths;
  init.catalog = setup_.catalog;
  init.exec = setup_.exec;
  init.on_fatal = [this](std::string) {
    uv_async_send(&ctx_.fatal);
  };
  // The native front over the core, answering through the HTTP server.
  init.spawn_front = [this](auto self, const core_handles& core) {
    return self->template spawn<caf::linked + caf::monitored>(
        rpc, rpc_init{core.supervisor, core.agents, core.metadata, info_,
                      core.exec, opts_.request_timeout});
  };
  init.spawn_more_fronts = [this](auto self, const core_handles& core) {
    std::vector<stats_client_actor> fronts;
    if (opts_.e2b == "on") {
      e2b::front_init fi;
      fi.agents = core.agents;
      fi.metadata = core.metadata;
      fi.token = opts_.token;
      fi.default_agent = opts_.e2b_agent;
      fi.execution = core.exec != nullptr;
      e2b_ = self->template spawn<caf::linked + caf::monitored>(e2b::front,
                                                                std::move(fi));
      fronts.push_back(caf::actor_cast<stats_client_actor>(e2b_));
    }
    if (opts_.mcp == "on") {
      mcp::front_init mi;
      mi.agents = core.agents;
      mi.metadata = core.metadata;
      mi.execution = core.exec != nullptr;
      mi.kill_on_rollback = core.exec && core.exec->kill_on_rollback;
      mi.default_agent = opts_.mcp_agent;
      mcp_ = self->template spawn<caf::linked + caf::monitored>(mcp::front,
                                                                std::move(mi));
      fronts.push_back(caf::actor_cast<stats_client_actor>(mcp_));
    }
    return fronts;
  };
  sup_ = system_.spawn(supervisor, std::move(init));
  setup_.catalog.reset();
  if (auto err = recover())
    return err;
  // The event endpoint serves before the first run can.
  if (const auto& exec = setup_.exec) {
    auto rel = exec->cgroups.root().substr(exec->cgroups.mount().size());
    endpoint_.emplace(
        &loop_.uv, &server_,
        [this](rpc_request req) { caf::anon_send(ctx_.rpc, std::move(req)); },
        exec->events_socket, rel);
    if (auto err = endpoint_->listen())
      return err;
    ctx_.endpoint = &*endpoint_;
  }
  return server_.listen();
}

int runtime::serve() {
  const auto& host = host_;
  auto where = (host.find(':') != std::string::npos ? "[" + host + "]" : host) +
               ":" + std::to_string(server_.port());
  log::info("daemon", "serving on http://" + where + "/v1/rpc" +
                          (opts_.token.empty() ? "" : " (token required)"));
  uv_signal_start(
      &ctx_.sigint,
      [](uv_signal_t* s, int) {
        begin_shutdown(static_cast<loop_context*>(s->data), "SIGINT");
      },
      SIGINT);
  uv_signal_start(
      &ctx_.sigterm,
      [](uv_signal_t* s, int) {
        begin_shutdown(static_cast<loop_context*>(s->data), "SIGTERM");
      },
      SIGTERM);
  uv_signal_start(
      &ctx_.sigusr1,
      [](uv_signal_t* s, int) {
        caf::anon_send(static_cast<loop_context*>(s->data)->rpc, atom::log_v);
      },
      SIGUSR1);
  if (sweep_)
    sweep_->start(opts_.qgroup_sweep);
  uv_run(&loop_.uv, UV_RUN_DEFAULT);
  stop();
  return ctx_.exit_code;
}

void runtime::stop() {
  if (stopped_)
    return;
  stopped_ = true;
  ctx_.rpc = nullptr;
  e2b_ = nullptr;
  mcp_ = nullptr;
  const auto& exec = setup_.exec;
  bool leave = exec && exec->live_restore;
  if (leave)
    exec->leaving->store(true);
  if (sup_) {
    caf::anon_send_exit(sup_, caf::exit_reason::user_shutdown);
    system_.await_all_actors_done();
    sup_ = nullptr;
  }
  left_runs_ = leave && os::populated(exec->cgroups.root());
  if (left_runs_)
    log::info("daemon",
              "runs left running for the next daemon (--live-restore)");
  // After a signal the loop has closed them already; after a failed
  // start nothing has.
  finish_loop(&ctx_);
  uv_run(&loop_.uv, UV_RUN_DEFAULT);
  uv_loop_close(&loop_.uv);
}

} // namespace allox::daemon
