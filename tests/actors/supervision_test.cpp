// SPDX-License-Identifier: Apache-2.0
// Supervision (actors/supervision.hpp) under CAF's deterministic scheduler:
// a real AGENT with real SESSION actors over a fake METADATA, so every
// restart, give-up and stop is the code the daemon runs, step by step.
// Failures are exits with an error, as an escaped exception ends an actor.
#include "actors/agent.hpp"
#include "actors/supervision.hpp"

#include "tests/fixtures/deterministic.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace allox;

// Named, not anonymous: unity builds put this file in one unit with the
// other actor tests, whose helpers have the same names.
namespace supervision_test {

/// What the fake METADATA saw; while `hold` is set, it keeps a session's
/// rows back until it gets a flush (a restart that takes its time).
struct catalog_log {
  std::vector<metadata_write> writes;
  std::vector<std::string> session_loads;
  bool hold = false;
  std::vector<std::pair<caf::typed_response_promise<catalog_snapshot>,
                        catalog_snapshot>>
      held;
};

using catalog_ptr = std::shared_ptr<catalog_log>;

checkpoint_row checkpoint(const std::string& sid, const std::string& id) {
  checkpoint_row c;
  c.agent_id = "a";
  c.session_id = sid;
  c.checkpoint_id = id;
  c.created_at_ns = 1;
  c.origin = "test";
  return c;
}

/// The persisted rows of session `sid`: its row and one checkpoint, which
/// a restarted actor must show.
catalog_snapshot session_rows(const std::string& sid) {
  catalog_snapshot snap;
  snap.sessions.push_back(session_row{"a", sid, 1, false, "c1", caf::none});
  snap.checkpoints.push_back(checkpoint(sid, "c1"));
  return snap;
}

metadata_actor::behavior_type fake_metadata(metadata_actor::pointer self,
                                            catalog_ptr log) {
  return {
      [](atom::load) -> caf::result<catalog_snapshot> {
        return catalog_snapshot{};
      },
      [](atom::load, const std::string&) -> caf::result<catalog_snapshot> {
        return catalog_snapshot{};
      },
      [self, log](atom::load, const std::string&,
                  const std::string& sid) -> caf::result<catalog_snapshot> {
        log->session_loads.push_back(sid);
        if (!log->hold)
          return session_rows(sid);
        auto rp = self->make_response_promise<catalog_snapshot>();
        log->held.emplace_back(rp, session_rows(sid));
        return rp;
      },
      [log](atom::write, metadata_write& w) -> caf::result<caf::ok_atom> {
        log->writes.push_back(w);
        return caf::ok_atom_v;
      },
      [log](atom::flush) {
        for (auto& [rp, snap] : log->held)
          rp.deliver(snap);
        log->held.clear();
      },
      [](atom::tick) {},
      [](atom::audit, const audit_query&) -> caf::result<audit_page> {
        return audit_page{};
      },
      [](atom::runs, const run_query&) -> caf::result<run_page> {
        return run_page{};
      },
      [](atom::writes, const session_ref&) -> caf::result<write_set_page> {
        return write_set_page{};
      },
      [](atom::stats) { return actor_stats{}; },
  };
}

/// The audit records of one op the AGENT sent to the catalog, as JSON.
std::vector<json::object> audited(const catalog_log& log,
                                  const std::string& op) {
  std::vector<json::object> out;
  for (const auto& w : log.writes)
    for (const auto& e : w.audit)
      if (e.op == op)
        out.push_back(json::parse(e.fields).as_object());
  return out;
}

/// The reply to a request, or its error.
template <class Reply>
struct answer {
  std::optional<Reply> value;
  caf::error error;
  bool answered = false;
};

/// One AGENT "a" with sessions over a fake METADATA; the test's own
/// `parent` is the AGENT's parent.
struct agent_fixture : test::deterministic {
  catalog_ptr catalog = std::make_shared<catalog_log>();
  metadata_actor metadata = sys.spawn(fake_metadata, catalog);
  caf::scoped_actor parent{sys};
  agent_actor actor;

  void spawn_agent(const std::vector<std::string>& sessions) {
    agent_init init;
    init.row = agent_row{"a", 1, false, caf::none};
    for (const auto& sid : sessions) {
      init.sessions.push_back(session_row{"a", sid, 1, false, "c1", caf::none});
      init.checkpoints.push_back(checkpoint(sid, "c1"));
    }
    init.paths = store::layout{"/nonexistent-store"};
    init.metadata = metadata;
    init.parent = parent->address();
    actor = sys.spawn(agent, std::move(init));
    sched.run();
  }

  ~agent_fixture() {
    if (actor)
      parent->send_exit(actor, caf::exit_reason::user_shutdown);
    sched.run();
    caf::anon_send_exit(metadata, caf::exit_reason::user_shutdown);
    sched.run();
  }

  /// Sends a request from a fresh actor; its answer once it comes (run
  /// the scheduler to get it).
  template <class Reply, class Handle, class... Ts>
  std::shared_ptr<answer<Reply>> send_request(Handle target, Ts... xs) {
    auto out = std::make_shared<answer<Reply>>();
    sys.spawn([out, target, xs...](caf::event_based_actor* self) {
      self->request(target, caf::infinite, xs...)
          .then(
              [out](Reply& r) {
                out->value = std::move(r);
                out->answered = true;
              },
              [out](caf::error& e) {
                out->error = std::move(e);
                out->answered = true;
              });
    });
    return out;
  }

  /// A request and everything it causes; its answer.
  template <class Reply, class Handle, class... Ts>
  answer<Reply> ask(Handle target, Ts... xs) {
    auto out = send_request<Reply>(target, xs...);
    sched.run();
    return *out;
  }

  /// The AGENT's answer for session `sid`.
  answer<session_actor> lookup(const std::string& sid) {
    return ask<session_actor>(actor, atom::session_v, sid);
  }

  /// Fails session `sid`'s actor as an escaped exception does, and runs
  /// what follows (the AGENT's decision, a restart).
  void fail(const std::string& sid) {
    auto s = lookup(sid);
    REQUIRE(s.value);
    parent->send_exit(*s.value, make_error(errc::internal, "injected"));
    sched.run();
  }
};

TEST_CASE("supervision: a restart budget allows max failures per window") {
  using namespace std::chrono_literals;
  supervision::restart_budget budget{2, 10s};
  supervision::time_point t0{};
  CHECK(budget.spend(t0));
  CHECK(budget.spend(t0 + 1s));
  CHECK_FALSE(budget.spend(t0 + 2s)); // three within ten seconds
  // The first two left the window: two failures in it again.
  CHECK(budget.spend(t0 + 11s + 1ms));
  CHECK(budget.recent() == 2);
}

TEST_CASE_FIXTURE(agent_fixture,
                  "supervision: a failing session is restarted from its "
                  "rows until its budget is spent, then given up") {
  spawn_agent({"s"});
  auto first = lookup("s");
  REQUIRE(first.value);
  auto previous = *first.value;
  for (size_t i = 1; i <= supervision::max_restarts_per_window; ++i) {
    fail("s");
    // Each restart loads the session's own rows and spawns a successor.
    CHECK(catalog->session_loads.size() == i);
    auto next = lookup("s");
    REQUIRE(next.value);
    CHECK(*next.value != previous);
    previous = *next.value;
  }
  // The successor has the persisted rows: its checkpoint list is theirs.
  auto page =
      ask<checkpoint_page>(previous, cmd::checkpoint_list{{"a", "s"}, "", 0});
  REQUIRE(page.value);
  CHECK(page.value->head == std::string{"c1"});
  auto failed = audited(*catalog, "session.actor_failed");
  REQUIRE(failed.size() == supervision::max_restarts_per_window);
  for (const auto& f : failed)
    CHECK(f.at("restarted") == true);
  // One failure more within the window: no restart, no load.
  fail("s");
  CHECK(catalog->session_loads.size() == supervision::max_restarts_per_window);
  failed = audited(*catalog, "session.actor_failed");
  REQUIRE(failed.size() == supervision::max_restarts_per_window + 1);
  CHECK(failed.back().at("restarted") == false);
  CHECK(failed.back().at("reason").as_string().find("injected") !=
        json::string::npos);
  // The AGENT reports the given-up session to whoever asks for it.
  auto gone = lookup("s");
  CHECK_FALSE(gone.value);
  REQUIRE(gone.error); // code_of needs an error
  CHECK(code_of(gone.error) == errc::internal);
  CHECK(message_of(gone.error).find("failed repeatedly") != std::string::npos);
}

TEST_CASE_FIXTURE(agent_fixture, "supervision: failures that left the "
                                 "window no longer count against the budget") {
  spawn_agent({"s"});
  for (size_t i = 0; i < supervision::max_restarts_per_window; ++i)
    fail("s");
  sched.advance_time(supervision::restart_window + std::chrono::seconds{1});
  fail("s");
  CHECK(catalog->session_loads.size() ==
        supervision::max_restarts_per_window + 1);
  CHECK(lookup("s").value);
  CHECK(audited(*catalog, "session.actor_failed").back().at("restarted") ==
        true);
}

TEST_CASE_FIXTURE(agent_fixture,
                  "supervision: a session that ends normally is forgotten, "
                  "not restarted") {
  spawn_agent({"s"});
  auto s = lookup("s");
  REQUIRE(s.value);
  caf::anon_send_exit(*s.value, caf::exit_reason::user_shutdown);
  sched.run();
  CHECK(catalog->session_loads.empty());
  CHECK(audited(*catalog, "session.actor_failed").empty());
  CHECK_FALSE(lookup("s").value);
}

TEST_CASE_FIXTURE(agent_fixture,
                  "supervision: on the parent's exit every session stops, in "
                  "the table's order, and the agent only after the last") {
  spawn_agent({"s2", "s3", "s1"});
  std::vector<caf::actor_addr> order_of;
  std::vector<std::string> names;
  for (auto sid : {"s1", "s2", "s3"}) {
    auto s = lookup(sid);
    REQUIRE(s.value);
    order_of.push_back(s.value->address());
    names.push_back(sid);
  }
  order_of.push_back(actor.address());
  names.push_back("agent");
  auto stopped = std::make_shared<std::vector<std::string>>();
  auto watched = order_of;
  // Held: an actor nobody references ends as unreachable.
  auto observer = sys.spawn(
      [stopped, watched, names](caf::event_based_actor* self) -> caf::behavior {
        for (const auto& a : watched)
          self->monitor(caf::actor_cast<caf::actor>(a));
        self->set_down_handler([=](caf::down_msg& dm) {
          for (size_t i = 0; i < watched.size(); ++i)
            if (watched[i] == dm.source)
              stopped->push_back(names[i]);
          if (stopped->size() == watched.size())
            self->quit();
        });
        // A behavior keeps it alive until the last down message.
        return {[](caf::ok_atom) {
        }};
      });
  sched.run();
  parent->send_exit(actor, caf::exit_reason::user_shutdown);
  sched.run();
  std::string seen;
  for (const auto& n : *stopped)
    seen += n + " ";
  CHECK(seen == "s1 s2 s3 agent ");
  // A shutdown is no failure: nothing restarted, nothing audited.
  CHECK(catalog->session_loads.empty());
  CHECK(audited(*catalog, "session.actor_failed").empty());
  actor = nullptr;
}

TEST_CASE_FIXTURE(agent_fixture,
                  "supervision: an exit from anyone but the parent does not "
                  "stop the agent") {
  spawn_agent({"s"});
  caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  sched.run();
  CHECK(lookup("s").value);
}

TEST_CASE_FIXTURE(agent_fixture,
                  "supervision: requests queued while a session restarts are "
                  "answered with an error or by its successor, none lost") {
  spawn_agent({"s"});
  auto first = lookup("s");
  REQUIRE(first.value);
  auto old = *first.value;
  catalog->hold = true;
  // Requests already in the failing actor's mailbox.
  std::vector<std::shared_ptr<answer<checkpoint_page>>> queued;
  for (int i = 0; i < 3; ++i)
    queued.push_back(send_request<checkpoint_page>(
        old, cmd::checkpoint_list{{"a", "s"}, "", 0}));
  parent->send_exit(old, make_error(errc::internal, "injected"));
  sched.run();
  for (auto& q : queued) {
    CHECK(q->answered);
    CHECK_FALSE(q->value);
    CHECK(q->error);
  }
  // While its rows load, the AGENT says the session is restarting.
  REQUIRE(catalog->held.size() == 1);
  auto during = lookup("s");
  CHECK_FALSE(during.value);
  REQUIRE(during.error); // code_of needs an error
  CHECK(code_of(during.error) == errc::conflict);
  CHECK(message_of(during.error).find("restarting") != std::string::npos);
  // A request sent to the ended actor now is bounced, not dropped.
  auto late = send_request<checkpoint_page>(
      old, cmd::checkpoint_list{{"a", "s"}, "", 0});
  sched.run();
  CHECK(late->answered);
  CHECK(late->error);
  // The rows arrive: the successor serves them.
  caf::anon_send(metadata, atom::flush_v);
  sched.run();
  auto waiting = std::make_shared<answer<session_actor>>(lookup("s"));
  REQUIRE(waiting->value);
  CHECK(*waiting->value != old);
  auto page = ask<checkpoint_page>(*waiting->value,
                                   cmd::checkpoint_list{{"a", "s"}, "", 0});
  REQUIRE(page.value);
  CHECK(page.value->head == std::string{"c1"});
}

/// A supervisor without children, to watch serve() from outside.
struct probe_state : supervision::supervisor_base {
  bool refuse = false;
  std::vector<std::string> seen_handling;
};

using probe_ptr = caf::stateful_actor<probe_state>*;

caf::behavior probe(probe_ptr self) {
  auto admit = [](probe_ptr p) -> caf::error {
    if (p->state.refuse)
      return make_error(errc::conflict, "refused");
    return caf::none;
  };
  auto handler = [](probe_ptr p,
                    const cmd::session_list&) -> caf::result<json::value> {
    p->state.seen_handling.push_back(p->state.handling);
    return json::value(json::object{});
  };
  return {
      [self, admit, handler](const cmd::session_list& c) {
        return supervision::serve(self, c, handler, admit);
      },
  };
}

TEST_CASE_FIXTURE(agent_fixture,
                  "supervision: serve counts every request, names its action "
                  "while it runs and refuses what admit refuses") {
  auto h = sys.spawn(probe);
  auto* p = dynamic_cast<caf::stateful_actor<probe_state>*>(
      caf::actor_cast<caf::abstract_actor*>(h));
  REQUIRE(p != nullptr);
  CHECK(ask<json::value>(h, cmd::session_list{"a"}).value);
  CHECK(p->state.seen_handling == std::vector<std::string>{"session.list"});
  CHECK(p->state.handling.empty());
  p->state.refuse = true;
  auto refused = ask<json::value>(h, cmd::session_list{"a"});
  REQUIRE(refused.error); // code_of needs an error
  CHECK(code_of(refused.error) == errc::conflict);
  CHECK(p->state.seen_handling.size() == 1); // the handler never ran
  CHECK(p->state.requests == 2);
  caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
  sched.run();
}

// -- stop stages: a supervisor whose children stop in order ------------------

/// What the staged children and the watcher saw, in order.
using stop_log = std::shared_ptr<std::vector<std::string>>;

struct held_exit {};

/// A child that logs the exit it is told; one that `holds` ends only when
/// it gets held_exit (a session finishing its last catalog write).
caf::behavior staged_child(caf::event_based_actor* self, std::string name,
                           stop_log log, bool holds) {
  self->set_exit_handler([self, name, log, holds](caf::exit_msg& em) {
    log->push_back("told " + name);
    if (!holds)
      self->quit(em.reason);
  });
  return {[self](held_exit) {
    self->quit(caf::exit_reason::user_shutdown);
  }};
}

struct staged_state : supervision::supervisor_base {
  std::vector<std::pair<std::string, supervision::child_slot<caf::actor>>>
      children;
};

/// Three children over two stages, as the SUPERVISOR orders its core:
/// `first` and `slow` (stage 0), `catalog` (stage 1).
caf::behavior staged_supervisor(caf::stateful_actor<staged_state>* self,
                                stop_log log, caf::actor_addr parent) {
  auto add = [&](const std::string& name, bool holds, uint8_t stage) {
    supervision::child_slot<caf::actor> slot;
    slot.handle = self->spawn<caf::linked + caf::monitored>(staged_child, name,
                                                            log, holds);
    slot.stop_stage = stage;
    self->state.children.emplace_back(name, std::move(slot));
  };
  add("catalog", false, 1);
  add("first", false, 0);
  add("slow", true, 0);
  supervision::supervise(self, std::move(parent), &staged_state::children,
                         "staged", [](auto, auto&, const caf::error&) {});
  return {[self](const std::string& name) {
    for (auto& kv : self->state.children)
      if (kv.first == name && kv.second.handle)
        self->send(kv.second.handle, held_exit{});
  }};
}

/// Logs the watched actor's end.
caf::behavior stop_watcher(caf::event_based_actor* self, caf::actor watched,
                           stop_log log) {
  self->monitor(watched);
  self->set_down_handler([self, log](caf::down_msg&) {
    log->push_back("supervisor ended");
    self->quit();
  });
  return {[](int) {
  }};
}

TEST_CASE("supervision: a stage is told to stop once the stage before it has "
          "ended, and the supervisor ends after the last child") {
  test::deterministic d;
  auto log = std::make_shared<std::vector<std::string>>();
  caf::scoped_actor parent{d.sys};
  auto sup = d.sys.spawn(staged_supervisor, log, parent->address());
  // Held: an actor nobody references is gone before its down message.
  auto watcher = d.sys.spawn(stop_watcher, sup, log);
  d.sched.run();
  // Exits from anyone but the parent do not stop it.
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
  d.sched.run();
  CHECK(log->empty());
  parent->send_exit(sup, caf::exit_reason::user_shutdown);
  d.sched.run();
  // Stage 0 told (in the table's order); the catalog waits for `slow`.
  CHECK(*log == std::vector<std::string>{"told first", "told slow"});
  caf::anon_send(sup, std::string{"slow"});
  d.sched.run();
  CHECK(*log == std::vector<std::string>{"told first", "told slow",
                                         "told catalog", "supervisor ended"});
}

TEST_CASE("supervision: a child with a budget of zero is given up at its "
          "first failure, and a normal end is only forgotten") {
  supervision::child_slot<caf::actor> slot;
  slot.budget = supervision::restart_budget{0};
  CHECK(supervision::decide(slot, caf::error{}, {}) ==
        supervision::down_decision::forget);
  CHECK(supervision::decide(slot, make_error(errc::internal, "x"), {}) ==
        supervision::down_decision::give_up);
  CHECK(slot.status == child_status::failed);
  CHECK(slot.restarts == 0);
}

} // namespace supervision_test
