// The RPC actor's own request deadlines under CAF's deterministic
// scheduler: a request nobody answers is answered `internal` once its
// deadline passes, exactly once, and a late answer is dropped.
#include "actors/rpc.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/send.hpp>
#include <doctest/doctest.h>

#include <memory>
#include <vector>

using namespace allox;

namespace {

using namespace std::chrono_literals;

struct deterministic {
  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;

  static caf::actor_system_config& prepare(caf::actor_system_config& c) {
    c.set("scheduler.policy", caf::atom("testing"));
    c.add_message_types<caf::id_block::allox>();
    return c;
  }
  deterministic()
      : sys(prepare(cfg)),
        sched(
            dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {}
};

/// Keeps what RPC posts (the test coordinator runs on this thread).
struct captured_replies final : reply_channel {
  std::vector<rpc_reply> replies;
  void post(rpc_reply reply) override { replies.push_back(std::move(reply)); }
};

/// The promises of dump requests a fake SUPERVISOR has not answered.
using held_promises =
    std::shared_ptr<std::vector<caf::typed_response_promise<json::value>>>;

/// A SUPERVISOR that holds every dump request until the test sends it
/// `atom::rpc`, which answers them all (promises are delivered from the
/// actor's own context, never from the test's).
supervisor_actor::behavior_type
silent_supervisor(supervisor_actor::pointer self, held_promises held) {
  return {
      [held](atom::rpc) -> caf::result<rpc_actor> {
        for (auto& rp : *held)
          rp.deliver(json::value(json::object{}));
        return make_error(errc::unsupported, "not in this test");
      },
      [](atom::agent) -> caf::result<agents_actor> {
        return make_error(errc::unsupported, "not in this test");
      },
      [self, held](atom::dump) -> caf::result<json::value> {
        auto rp = self->make_response_promise<json::value>();
        held->push_back(rp);
        return rp;
      },
  };
}

} // namespace

TEST_CASE("rpc: a request past its deadline is answered internal, once") {
  deterministic d;
  captured_replies channel;
  auto held =
      std::make_shared<std::vector<caf::typed_response_promise<json::value>>>();
  auto supervisor = d.sys.spawn(silent_supervisor, held);
  rpc_init init;
  init.supervisor = supervisor;
  init.channel = &channel;
  init.timeout = std::chrono::milliseconds{2000};
  auto rpc_handle = d.sys.spawn(rpc, std::move(init));
  caf::anon_send(rpc_handle, atom::rpc_v, uint64_t{7},
                 std::string{"system.dump"}, json::value(json::object{}));
  d.sched.run();
  REQUIRE(held->size() == 1);
  CHECK(channel.replies.empty());
  // Not yet: the tick comes every 500 ms, the deadline at 2 s.
  d.sched.advance_time(std::chrono::milliseconds{1000});
  d.sched.run();
  CHECK(channel.replies.empty());
  for (int i = 0; i < 4 && channel.replies.empty(); ++i) {
    d.sched.advance_time(std::chrono::milliseconds{500});
    d.sched.run();
  }
  REQUIRE(channel.replies.size() == 1);
  CHECK(channel.replies[0].ticket == 7);
  CHECK(channel.replies[0].status == 500);
  CHECK(channel.replies[0].body.find("request timed out inside the daemon") !=
        std::string::npos);
  // The owner answers late: dropped, the caller already has its answer.
  caf::anon_send(supervisor, atom::rpc_v);
  d.sched.run();
  CHECK(channel.replies.size() == 1);
  // With nothing pending the tick stops: no timer keeps firing.
  d.sched.advance_time(std::chrono::milliseconds{5000});
  d.sched.run();
  CHECK(channel.replies.size() == 1);
  caf::anon_send_exit(rpc_handle, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
  d.sched.run();
}

TEST_CASE("rpc: an answered request leaves no deadline behind") {
  deterministic d;
  captured_replies channel;
  auto held =
      std::make_shared<std::vector<caf::typed_response_promise<json::value>>>();
  auto supervisor = d.sys.spawn(silent_supervisor, held);
  rpc_init init;
  init.supervisor = supervisor;
  init.channel = &channel;
  init.timeout = std::chrono::milliseconds{2000};
  auto rpc_handle = d.sys.spawn(rpc, std::move(init));
  for (uint64_t ticket = 1; ticket <= 3; ++ticket)
    caf::anon_send(rpc_handle, atom::rpc_v, ticket, std::string{"system.dump"},
                   json::value(json::object{}));
  d.sched.run();
  REQUIRE(held->size() == 3);
  caf::anon_send(supervisor, atom::rpc_v);
  d.sched.run();
  REQUIRE(channel.replies.size() == 3);
  for (const auto& r : channel.replies)
    CHECK(r.status == 200);
  // Long past every deadline: nothing more is posted.
  d.sched.advance_time(std::chrono::milliseconds{10000});
  d.sched.run();
  CHECK(channel.replies.size() == 3);
  caf::anon_send_exit(rpc_handle, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
  d.sched.run();
}
