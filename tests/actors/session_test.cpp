// SPDX-License-Identifier: Apache-2.0
// The SESSION actor's facets under CAF's deterministic scheduler, with a
// fake METADATA: what each handler answers and what it asks the catalog to
// write or read, without a store, a cgroup or root. (The real kernel paths
// are in tests/integration/.)
#include "actors/session/session.hpp"
#include "messages/results/checkpoints_json.hpp"
#include "messages/results/processes.hpp"
#include "messages/results/runs_json.hpp"
#include "messages/results/runtime_json.hpp"
#include "messages/results/stats_json.hpp"
#include "messages/results/turns_json.hpp"

#include "tests/fixtures/deterministic.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <vector>

using namespace allox;

namespace {

/// What the fake METADATA saw, and the page it answers run queries with.
struct catalog_log {
  std::vector<metadata_write> writes;
  std::vector<run_query> queries;
  run_page page;
  /// When set, every write fails with it.
  caf::error fail_writes;
};

using catalog_ptr = std::shared_ptr<catalog_log>;

/// A METADATA that commits nothing: it records writes and queries.
metadata_actor::behavior_type fake_metadata(catalog_ptr log) {
  return {
      [](atom::load) -> caf::result<catalog_snapshot> {
        return catalog_snapshot{};
      },
      [](atom::load, const std::string&) -> caf::result<catalog_snapshot> {
        return catalog_snapshot{};
      },
      [](atom::load, const std::string&, const std::string&)
          -> caf::result<catalog_snapshot> { return catalog_snapshot{}; },
      [log](atom::write, metadata_write& w) -> caf::result<caf::ok_atom> {
        log->writes.push_back(w);
        if (log->fail_writes)
          return log->fail_writes;
        return caf::ok_atom_v;
      },
      [](atom::flush) {},
      [](atom::tick) {},
      [](atom::audit, const audit_query&) -> caf::result<audit_page> {
        return audit_page{};
      },
      [log](atom::runs, const run_query& q) -> caf::result<run_page> {
        log->queries.push_back(q);
        return log->page;
      },
      [](atom::writes, const session_ref&) -> caf::result<write_set_page> {
        return write_set_page{};
      },
      [](atom::stats) { return actor_stats{}; },
  };
}

checkpoint_row checkpoint(const std::string& id,
                          caf::optional<std::string> parent) {
  checkpoint_row c;
  c.agent_id = "a";
  c.session_id = "s";
  c.checkpoint_id = id;
  c.created_at_ns = id == "c1" ? 1 : 2;
  c.origin = "test";
  c.parent_id = parent;
  return c;
}

run_record earlier_run(const std::string& id, const std::string& session) {
  json::object row{{"run_id", id},
                   {"agent_id", "a"},
                   {"session_id", session},
                   {"state", "completed"},
                   {"processes", json::object{}}};
  return {id, "a", session, 7, "completed", false, json::serialize(row)};
}

/// One session actor (a/s, two checkpoints, head c2) over a fake METADATA.
struct session_fixture : test::deterministic {
  catalog_ptr catalog = std::make_shared<catalog_log>();
  metadata_actor metadata = sys.spawn(fake_metadata, catalog);
  session_actor actor;
  /// The row's turn state and policy (catalog text), for the turns facet.
  caf::optional<std::string> turn_state;
  caf::optional<std::string> policy;
  /// The head's (c2's) Btrfs generation, and the interval timer's probe.
  int64_t head_generation = 0;
  std::function<expected<int64_t>(const std::string&)> probe;

  void spawn_session(std::vector<std::string> interrupted = {},
                     bool execution = true) {
    session_init init;
    init.row = session_row{"a", "s", 1, false, "c2", caf::none};
    init.row.turn_state = turn_state;
    init.row.policy = policy;
    init.checkpoints = {checkpoint("c1", caf::none), checkpoint("c2", "c1")};
    init.checkpoints.back().generation = head_generation;
    init.generation_probe = probe;
    init.paths = store::layout{"/nonexistent-store"};
    init.metadata = metadata;
    if (execution) {
      auto exec = std::make_shared<exec_config>();
      exec->audit_root = "/nonexistent-runs";
      init.exec = exec;
    }
    init.interrupted_runs = std::move(interrupted);
    actor = sys.spawn(session, std::move(init));
    sched.run();
  }

  ~session_fixture() {
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(metadata, caf::exit_reason::user_shutdown);
    sched.run();
  }

  /// Sends `c` to the session and runs everything it causes; the reply
  /// or the error.
  template <class Reply = json::value, class Command>
  std::pair<std::optional<Reply>, caf::error> ask(Command c) {
    auto out = std::make_shared<std::pair<std::optional<Reply>, caf::error>>();
    auto target = actor;
    sys.spawn([out, target, c](caf::event_based_actor* self) {
      self->request(target, caf::infinite, c)
          .then([out](Reply& r) { out->first = std::move(r); },
                [out](caf::error& e) { out->second = std::move(e); });
    });
    sched.run();
    return *out;
  }

  /// The session's stats as system.dump spells them.
  std::pair<std::optional<json::value>, caf::error> ask_dump() {
    auto r = ask<actor_stats>(atom::stats_v);
    std::pair<std::optional<json::value>, caf::error> out{std::nullopt,
                                                          r.second};
    if (r.first)
      out.first = json::value(to_json(*r.first));
    return out;
  }

  /// As ask(), with the command's typed reply as the native wire spells it.
  template <class Command>
  std::pair<std::optional<json::object>, caf::error> ask_wire(Command c) {
    auto r = ask<typename Command::reply>(std::move(c));
    std::pair<std::optional<json::object>, caf::error> out{std::nullopt,
                                                           r.second};
    if (r.first)
      out.first = to_json(*r.first);
    return out;
  }
};

session_ref ref() {
  return {"a", "s"};
}

} // namespace

TEST_CASE_FIXTURE(session_fixture,
                  "session facets: checkpoint.list and describe answer from "
                  "the DAG without a catalog round trip") {
  spawn_session();
  auto list = ask_wire(cmd::checkpoint_list{ref(), "", 0});
  REQUIRE(list.first);
  CHECK(list.first->at("head") == "c2");
  CHECK(list.first->at("checkpoint_ids") == json::array{"c1", "c2"});
  auto page = ask_wire(cmd::checkpoint_list{ref(), "", 1});
  REQUIRE(page.first);
  CHECK(page.first->at("has_more") == true);
  CHECK(page.first->at("next_cursor") == "c1");
  auto one = ask_wire(cmd::checkpoint_describe{ref(), "c1"});
  REQUIRE(one.first);
  CHECK(one.first->at("is_head") == false);
  auto missing = ask_wire(cmd::checkpoint_describe{ref(), "zz"});
  CHECK(code_of(missing.second) == errc::not_found);
  CHECK(catalog->writes.empty());
  CHECK(catalog->queries.empty());
}

TEST_CASE_FIXTURE(session_fixture,
                  "session facets: process.list is one catalog page, shaped "
                  "as asked") {
  spawn_session();
  catalog->page.runs = {earlier_run("r1", "s"), earlier_run("r2", "s")};
  catalog->page.has_more = true;
  cmd::process_list paged{ref(), 2, "r0"};
  auto page = ask<run_list>(paged);
  REQUIRE(page.first);
  CHECK(page.first->runs.size() == 2);
  CHECK(page.first->has_more);
  CHECK(page.first->next_cursor == std::string{"r2"});
  REQUIRE(catalog->queries.size() == 1);
  auto& q = catalog->queries[0];
  CHECK(q.agent_id == "a");
  CHECK(q.session_id == "s");
  CHECK(q.after == "r0");
  CHECK(q.limit == 2);
  auto wire = to_json(*page.first);
  auto& o = wire.as_object();
  CHECK(o.at("has_more") == true);
  CHECK(o.at("next_cursor") == "r2");
  REQUIRE(o.at("runs").as_array().size() == 2);
  CHECK_FALSE(o.at("runs").as_array()[0].as_object().contains("processes"));
  // Unpaged: the prototype's bare array.
  auto all = ask<run_list>(cmd::process_list{ref(), 0, ""});
  REQUIRE(all.first);
  CHECK(to_json(*all.first).as_array().size() == 2);
}

TEST_CASE_FIXTURE(session_fixture,
                  "session facets: an earlier run comes from the catalog, "
                  "and another session's run is refused") {
  spawn_session();
  catalog->page.runs = {earlier_run("r1", "s")};
  auto mine = ask<run_row>(cmd::process_get{ref(), "r1"});
  REQUIRE(mine.first);
  CHECK(mine.first->state == run_phase::completed);
  catalog->page.runs = {earlier_run("r2", "other")};
  auto theirs = ask<run_row>(cmd::process_get{ref(), "r2"});
  CHECK(code_of(theirs.second) == errc::invalid_argument);
  catalog->page.runs.clear();
  auto unknown = ask<run_row>(cmd::process_get{ref(), "r3"});
  CHECK(code_of(unknown.second) == errc::not_found);
  // process.wait of a run this actor never ran answers like process.get.
  catalog->page.runs = {earlier_run("r1", "s")};
  auto waited = ask<run_row>(cmd::process_wait{ref(), "r1", 1000});
  REQUIRE(waited.first);
  CHECK(waited.first->run_id == "r1");
}

TEST_CASE_FIXTURE(session_fixture,
                  "session facets: one execution lease at a time") {
  spawn_session();
  auto lease = ask<lease_granted>(cmd::execution_acquire{ref()});
  REQUIRE(lease.first);
  CHECK_FALSE(lease.first->lease_token.empty());
  auto second = ask<lease_granted>(cmd::execution_acquire{ref()});
  CHECK(code_of(second.second) == errc::conflict);
  // A lease blocks mutations and runs.
  cmd::process_start run;
  run.session = ref();
  run.argv = {"true"};
  auto start = ask<run_row>(run);
  CHECK(code_of(start.second) == errc::conflict);
  auto released =
      ask_wire(cmd::execution_release{ref(), lease.first->lease_token});
  REQUIRE(released.first);
  CHECK(released.first->at("released") == true);
  auto again = ask<lease_granted>(cmd::execution_acquire{ref()});
  CHECK(again.first);
}

TEST_CASE_FIXTURE(session_fixture,
                  "session facets: interrupted runs fence a restarted actor "
                  "until session.unfence releases them in the catalog") {
  spawn_session({"r-old"}, false);
  auto blocked = ask_wire(cmd::checkpoint_delete{ref(), "c1", false, ""});
  CHECK(code_of(blocked.second) == errc::conflict);
  auto lease = ask<lease_granted>(cmd::execution_acquire{ref()});
  CHECK(code_of(lease.second) == errc::conflict);
  auto unfenced = ask_wire(cmd::session_unfence{ref(), "test"});
  REQUIRE(unfenced.first);
  CHECK(unfenced.first->at("cleared").at("interrupted_runs") ==
        json::array{"r-old"});
  REQUIRE(catalog->writes.size() == 1);
  CHECK(catalog->writes[0].release_runs == std::vector<std::string>{"r-old"});
  REQUIRE(catalog->writes[0].audit.size() == 1);
  CHECK(catalog->writes[0].audit[0].op == "session.unfence");
  auto lease_now = ask<lease_granted>(cmd::execution_acquire{ref()});
  CHECK(lease_now.first);
}

TEST_CASE_FIXTURE(session_fixture,
                  "session facets: session.configure persists settings and "
                  "refuses bad limits") {
  spawn_session();
  cmd::session_configure c;
  c.session = ref();
  c.network = "isolated";
  c.max_runs = 4;
  auto r = ask<settings_view>(c);
  REQUIRE(r.first);
  CHECK(r.first->settings.network == "isolated");
  CHECK(r.first->settings.max_runs == 4);
  REQUIRE(catalog->writes.size() == 1);
  REQUIRE(catalog->writes[0].set_exec_settings.size() == 1);
  const auto& text = catalog->writes[0].set_exec_settings[0].settings;
  REQUIRE(text);
  auto saved = json::parse(*text).as_object();
  CHECK(saved.at("max_runs") == 4);
  cmd::session_configure bad;
  bad.session = ref();
  bad.has_limits = true;
  bad.limits.push_back({"swap.max", "1", false});
  auto refused = ask<settings_view>(bad);
  CHECK(code_of(refused.second) == errc::invalid_argument);
  // A failed commit changes nothing.
  catalog->fail_writes = make_error(errc::internal, "disk full");
  cmd::session_configure lost;
  lost.session = ref();
  lost.network = "inherit";
  auto failed = ask<settings_view>(lost);
  CHECK(code_of(failed.second) == errc::internal);
  cmd::session_configure none;
  none.session = ref();
  catalog->fail_writes = caf::none;
  auto now = ask<settings_view>(none);
  REQUIRE(now.first);
  CHECK(now.first->settings.network == "isolated");
}

TEST_CASE_FIXTURE(session_fixture,
                  "session facets: process events and tracking failures of "
                  "runs the session does not track are ignored") {
  spawn_session();
  process_event_batch batch;
  process_record r;
  r.cookie = 12345;
  r.kind = process_event_kind::fork;
  r.pid = 1;
  r.process_id = "boot:1:1";
  batch.events.push_back(r);
  caf::anon_send(actor, batch);
  caf::anon_send(actor, tracking_failure{{12345}, "lost", {3}});
  sched.run();
  // The actor still serves.
  auto list = ask_wire(cmd::checkpoint_list{ref(), "", 0});
  REQUIRE(list.first);
  CHECK(list.first->at("head") == "c2");
  // process.tree of a run the catalog does not know.
  auto tree = ask<process_tree_view>(cmd::process_tree{ref(), "nope"});
  CHECK_FALSE(tree.first);
  CHECK(tree.second);
}

TEST_CASE_FIXTURE(session_fixture,
                  "turns facet: the state comes from the row, and each event "
                  "writes it before the reply") {
  turn_state = R"({"turn_count":4,"session_started":true,"skip_next":true,)"
               R"("message":"m","seen_turn_ids":["t1"]})";
  policy = R"({"auto_checkpoint_turns":true})";
  spawn_session();
  auto st = ask_wire(cmd::turn_status{ref()});
  REQUIRE(st.first);
  CHECK(st.first->at("turn_count") == 4);
  CHECK(st.first->at("skip_next_auto_checkpoint") == true);
  CHECK(st.first->at("enabled") == true);
  auto dup = ask_wire(cmd::turn_end{ref(), "t1", true, false});
  REQUIRE(dup.first);
  CHECK(dup.first->at("skipped") == "duplicate");
  CHECK(catalog->writes.empty()); // nothing changed
  auto skipped = ask_wire(cmd::turn_end{ref(), "t2", true, false});
  REQUIRE(skipped.first);
  CHECK(skipped.first->at("skipped") == "rollback");
  REQUIRE(catalog->writes.size() == 1);
  const auto& w = catalog->writes[0];
  CHECK_FALSE(w.durable);
  REQUIRE(w.set_turn_states.size() == 1);
  auto saved = json::parse(*w.set_turn_states[0].settings).as_object();
  CHECK(saved.at("skip_next") == false);
  CHECK(saved.at("turn_count") == 4);
  CHECK(saved.at("seen_turn_ids") == json::array{"t1", "t2"});
  CHECK(saved.at("message") == "m");
}

TEST_CASE_FIXTURE(session_fixture,
                  "turns facet: the interval timer follows the policy, a "
                  "busy session skips a tick and older armings are stale") {
  policy = R"({"interval_seconds":5})";
  spawn_session();
  CHECK(sched.has_pending_timeout());
  // A lease makes the session busy: the tick takes nothing, arms the next.
  REQUIRE(ask<lease_granted>(cmd::execution_acquire{ref()}).first);
  sched.advance_time(std::chrono::seconds{5});
  sched.run();
  auto dump = ask_dump();
  REQUIRE(dump.first);
  CHECK(dump.first->at("turns").at("interval_busy") == 1);
  CHECK(sched.has_pending_timeout());
  // Turned off: the pending tick is stale, and none follows it.
  auto off = ask_wire(cmd::policy_set{ref(), {{}, {"interval_seconds"}}, "t"});
  REQUIRE(off.first);
  CHECK(off.first->at("sources").at("interval_seconds") == "default");
  sched.advance_time(std::chrono::seconds{5});
  sched.run();
  CHECK_FALSE(sched.has_pending_timeout());
  dump = ask_dump();
  CHECK(dump.first->at("turns").at("interval_busy") == 1);
  // The policy.set was durable and audited.
  REQUIRE_FALSE(catalog->writes.empty());
  const auto& w = catalog->writes.back();
  CHECK(w.durable);
  REQUIRE(w.set_policies.size() == 1);
  CHECK(w.set_policies[0].settings == caf::none);
  REQUIRE(w.audit.size() == 1);
  CHECK(w.audit[0].op == "policy.set");
}

TEST_CASE_FIXTURE(session_fixture,
                  "turns facet: an interval tick when nothing changed since "
                  "the head takes nothing and arms the next one") {
  policy = R"({"interval_seconds":30})";
  head_generation = 41;
  std::vector<std::string> probed;
  bool unreadable = false;
  probe = [&](const std::string& current) -> expected<int64_t> {
    probed.push_back(current);
    if (unreadable)
      return make_error(errc::internal, "no such subvolume");
    return int64_t{41}; // current/ as the head snapshot left it
  };
  spawn_session();
  // Nothing before the interval has passed.
  sched.advance_time(std::chrono::seconds{29});
  sched.run();
  CHECK(probed.empty());
  sched.advance_time(std::chrono::seconds{1});
  sched.run();
  REQUIRE(probed.size() == 1);
  CHECK(probed[0] ==
        "/nonexistent-store/agents/a/workspace/sessions/s/current");
  auto dump = ask_dump();
  REQUIRE(dump.first);
  CHECK(dump.first->at("turns").at("interval_unchanged") == 1);
  CHECK(dump.first->at("turns").at("interval_checkpoints") == 0);
  CHECK(dump.first->at("state") == "idle"); // no checkpoint started
  // No catalog write: nothing was taken.
  CHECK(catalog->writes.empty());
  // The next tick follows one interval later, and again finds nothing.
  CHECK(sched.has_pending_timeout());
  sched.advance_time(std::chrono::seconds{30});
  sched.run();
  CHECK(probed.size() == 2);
  dump = ask_dump();
  CHECK(dump.first->at("turns").at("interval_unchanged") == 2);
  // A failed probe is logged and the timer goes on.
  unreadable = true;
  sched.advance_time(std::chrono::seconds{30});
  sched.run();
  CHECK(probed.size() == 3);
  CHECK(sched.has_pending_timeout());
  CHECK(catalog->writes.empty());
}
