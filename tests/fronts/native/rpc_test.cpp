// SPDX-License-Identifier: Apache-2.0
// The RPC actor's own request deadlines under CAF's deterministic
// scheduler: a request nobody answers is answered `internal` once its
// deadline passes, exactly once, and a late answer is dropped; a bulk
// transfer's steps are answered typed.
#include "fronts/native/rpc.hpp"

#include "tests/fixtures/deterministic.hpp"

#include <caf/send.hpp>
#include <doctest/doctest.h>

#include <memory>
#include <vector>

using namespace allox;

namespace {

using namespace std::chrono_literals;

/// A reply RPC gave, and the request it answers.
struct captured_reply {
  uint64_t request;
  rpc_reply reply;
};

/// Keeps what RPC replies (the test coordinator runs on this thread).
struct captured_replies {
  std::vector<captured_reply> replies;
};

/// The promises of dump requests a fake SUPERVISOR has not answered.
using held_promises =
    std::shared_ptr<std::vector<caf::typed_response_promise<actor_stats>>>;

/// A SUPERVISOR that holds every dump request until the test sends it
/// `atom::rpc`, which answers them all (promises are delivered from the
/// actor's own context, never from the test's).
supervisor_actor::behavior_type
silent_supervisor(supervisor_actor::pointer self, held_promises held) {
  return {
      [held](atom::rpc) -> caf::result<rpc_actor> {
        for (auto& rp : *held)
          rp.deliver(actor_stats{});
        return make_error(errc::unsupported, "not in this test");
      },
      [](atom::agent) -> caf::result<agents_actor> {
        return make_error(errc::unsupported, "not in this test");
      },
      [self, held](atom::stats) -> caf::result<actor_stats> {
        auto rp = self->make_response_promise<actor_stats>();
        held->push_back(rp);
        return rp;
      },
  };
}

/// RPC with a 2 s deadline in front of a silent SUPERVISOR; replies are
/// captured, and both actors stop with the fixture.
struct rpc_fixture : test::deterministic {
  captured_replies channel;
  held_promises held =
      std::make_shared<std::vector<caf::typed_response_promise<actor_stats>>>();
  supervisor_actor supervisor = sys.spawn(silent_supervisor, held);
  rpc_actor rpc_handle;

  rpc_fixture() {
    rpc_init init;
    init.supervisor = supervisor;
    init.timeout = std::chrono::milliseconds{2000};
    rpc_handle = sys.spawn(rpc, std::move(init));
  }

  ~rpc_fixture() {
    caf::anon_send_exit(rpc_handle, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
    sched.run();
  }

  /// A system.dump request, which the silent SUPERVISOR holds.
  void dump_request(uint64_t request) {
    caf::anon_send(
        rpc_handle,
        rpc_request{"system.dump", json::object{},
                    [this, request](rpc_reply r) {
                      channel.replies.push_back({request, std::move(r)});
                    }});
  }
};

} // namespace

TEST_CASE_FIXTURE(rpc_fixture, "rpc: a request past its deadline is "
                               "answered internal, once") {
  dump_request(7);
  sched.run();
  REQUIRE(held->size() == 1);
  CHECK(channel.replies.empty());
  // Not yet: the tick comes every 500 ms, the deadline at 2 s.
  sched.advance_time(std::chrono::milliseconds{1000});
  sched.run();
  CHECK(channel.replies.empty());
  for (int i = 0; i < 4 && channel.replies.empty(); ++i) {
    sched.advance_time(std::chrono::milliseconds{500});
    sched.run();
  }
  REQUIRE(channel.replies.size() == 1);
  CHECK(channel.replies[0].request == 7);
  CHECK(channel.replies[0].reply.status == 500);
  CHECK(channel.replies[0].reply.body.find(
            "request timed out inside the daemon") != std::string::npos);
  // The owner answers late: dropped, the caller already has its answer.
  caf::anon_send(supervisor, atom::rpc_v);
  sched.run();
  CHECK(channel.replies.size() == 1);
  // With nothing pending the tick stops: no timer keeps firing.
  sched.advance_time(std::chrono::milliseconds{5000});
  sched.run();
  CHECK(channel.replies.size() == 1);
}

TEST_CASE_FIXTURE(rpc_fixture,
                  "rpc: an answered request leaves no deadline behind") {
  for (uint64_t request = 1; request <= 3; ++request)
    dump_request(request);
  sched.run();
  REQUIRE(held->size() == 3);
  caf::anon_send(supervisor, atom::rpc_v);
  sched.run();
  REQUIRE(channel.replies.size() == 3);
  for (const auto& r : channel.replies)
    CHECK(r.reply.status == 200);
  // Long past every deadline: nothing more is posted.
  sched.advance_time(std::chrono::milliseconds{10000});
  sched.run();
  CHECK(channel.replies.size() == 3);
}

TEST_CASE_FIXTURE(rpc_fixture, "rpc: a bulk transfer's steps are answered "
                               "typed, with the request's words for bad ids") {
  std::vector<caf::error> begun;
  std::vector<caf::error> audited;
  cmd::file_transfer_begin begin;
  begin.session = {"not an id!", "s"};
  begin.path = "f";
  transfer_answer a;
  a.begun = [&](expected<transfer_begun> r) {
    REQUIRE_FALSE(r);
    begun.push_back(r.error());
  };
  caf::anon_send(rpc_handle, transfer_request{begin, a});
  cmd::file_transfer_end end;
  end.session = {"a", ""};
  transfer_answer b;
  b.audited = [&](expected<transfer_audited> r) {
    REQUIRE_FALSE(r);
    audited.push_back(r.error());
  };
  caf::anon_send(rpc_handle, transfer_request{end, b});
  sched.run();
  REQUIRE(begun.size() == 1);
  CHECK(code_of(begun[0]) == errc::invalid_argument);
  CHECK(message_of(begun[0]) == "invalid agent id: 'not an id!'");
  REQUIRE(audited.size() == 1);
  CHECK(code_of(audited[0]) == errc::invalid_argument);
  CHECK(message_of(audited[0]) == "missing string parameter: session_id");
  // Answered once: nothing more comes at the deadline.
  sched.advance_time(std::chrono::milliseconds{5000});
  sched.run();
  CHECK(begun.size() == 1);
  CHECK(audited.size() == 1);
}
