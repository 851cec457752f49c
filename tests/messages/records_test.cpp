// SPDX-License-Identifier: Apache-2.0
#include "messages/records.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <doctest/doctest.h>

#include <vector>

using namespace allox;
using namespace std::string_literals;

namespace {

/// How many fields inspect() names.
size_t inspected_fields(metadata_write& w) {
  size_t n = 0;
  detail::field_visitor count{[&n](auto&... fields) {
    n = sizeof...(fields);
  }};
  inspect(count, w);
  return n;
}

/// A write with one change of every kind, tagged with `tag`.
metadata_write one_of_each(const std::string& tag) {
  metadata_write w;
  w.put_agents.push_back({tag, 1, false});
  w.delete_agents.push_back(tag);
  w.put_sessions.push_back({tag, "s", 1, false, caf::none, caf::none});
  w.delete_sessions.push_back({tag, "s"});
  checkpoint_row c;
  c.agent_id = tag;
  w.put_checkpoints.push_back(c);
  w.delete_checkpoints.push_back(c);
  w.set_heads.push_back({tag, "s", "head"});
  w.set_exec_settings.push_back({tag, "s", R"({"network":"isolated"})"});
  w.set_turn_states.push_back({tag, "s", R"({"turn_count":1})"});
  w.set_policies.push_back({tag, "", R"({"strict":true})"});
  w.set_share_policies.push_back({tag, "s", R"({"enabled":true})"});
  w.set_front_records.push_back({tag, "s", R"({"front":"e2b"})"});
  journal_row j;
  j.agent_id = tag;
  w.put_journals.push_back(j);
  w.delete_journals.push_back({tag, "s"});
  w.audit.push_back({1, "op", tag, "s", "{}"});
  w.put_runs.push_back({tag, tag, "s", 1, "running", false, "{}"});
  w.release_runs.push_back(tag);
  w.put_write_sets.push_back({tag, "s", "c", "{}"});
  return w;
}

} // namespace

TEST_CASE("records: inspect() names every field of metadata_write") {
  metadata_write w;
  // Fails to compile once a field is added: add it to inspect() (which
  // the wire, the log and append() read), then count it here.
  auto& [put_agents, delete_agents, put_sessions, delete_sessions,
         put_checkpoints, delete_checkpoints, set_heads, set_exec_settings,
         set_turn_states, set_policies, set_share_policies, set_front_records,
         put_journals, delete_journals, audit, put_runs, release_runs,
         put_write_sets, mark_prototype_imported, mark_runs_imported, durable] =
      w;
  (void)put_agents;
  (void)durable;
  CHECK(inspected_fields(w) == 21);
}

TEST_CASE("records: append keeps every change of both writes, in order") {
  auto into = one_of_each("a");
  append(into, one_of_each("b"));
  CHECK(into.put_agents.size() == 2);
  CHECK(into.delete_agents == std::vector<std::string>{"a", "b"});
  CHECK(into.put_sessions.size() == 2);
  CHECK(into.delete_sessions.size() == 2);
  CHECK(into.put_checkpoints.size() == 2);
  CHECK(into.delete_checkpoints.size() == 2);
  CHECK(into.put_write_sets.size() == 2);
  CHECK(into.set_heads.size() == 2);
  // session.configure's settings survive a merge (they used to be lost).
  REQUIRE(into.set_exec_settings.size() == 2);
  CHECK(into.set_exec_settings[0].agent_id == "a");
  CHECK(into.set_exec_settings[1].agent_id == "b");
  CHECK(into.set_exec_settings[1].settings == R"({"network":"isolated"})"s);
  REQUIRE(into.set_front_records.size() == 2);
  CHECK(into.set_front_records[1].agent_id == "b");
  REQUIRE(into.set_share_policies.size() == 2);
  CHECK(into.set_share_policies[1].agent_id == "b");
  CHECK(into.put_journals.size() == 2);
  CHECK(into.delete_journals.size() == 2);
  REQUIRE(into.audit.size() == 2);
  CHECK(into.audit[0].agent_id == "a");
  CHECK(into.audit[1].agent_id == "b");
  REQUIRE(into.put_runs.size() == 2);
  CHECK(into.put_runs[1].run_id == "b");
  CHECK(into.release_runs == std::vector<std::string>{"a", "b"});
}

TEST_CASE("records: append keeps a flag either write sets") {
  metadata_write into;
  into.durable = false;
  metadata_write from;
  from.mark_prototype_imported = true;
  from.mark_runs_imported = true;
  append(into, std::move(from));
  CHECK(into.mark_prototype_imported);
  CHECK(into.mark_runs_imported);
  // One part that must be durable makes the whole write durable.
  CHECK(into.durable);
  metadata_write lazy;
  lazy.durable = false;
  metadata_write also_lazy;
  also_lazy.durable = false;
  append(lazy, std::move(also_lazy));
  CHECK_FALSE(lazy.durable);
  CHECK_FALSE(lazy.mark_prototype_imported);
}

TEST_CASE("records: optionals survive serialization, none apart from empty") {
  metadata_write w;
  checkpoint_row c;
  c.checkpoint_id = "c2";
  c.message = ""s;
  c.metadata = R"({"k":1})"s;
  c.parent_id = "c1"s;
  auto bare = c;
  bare.message = caf::none;
  bare.metadata = caf::none;
  bare.parent_id = caf::none;
  w.put_checkpoints = {c, bare};
  w.put_sessions.push_back({"a", "s", 1, false, "c2"s, caf::none});
  w.set_heads.push_back({"a", "s", caf::none});
  w.set_exec_settings.push_back({"a", "s", R"({"max_runs":2})"s});
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  REQUIRE_FALSE(sink(w));
  metadata_write back;
  caf::binary_deserializer source{nullptr, buf};
  REQUIRE_FALSE(source(back));
  REQUIRE(back.put_checkpoints.size() == 2);
  CHECK(back.put_checkpoints[0].message == ""s);
  CHECK(back.put_checkpoints[0].metadata == R"({"k":1})"s);
  CHECK(back.put_checkpoints[0].parent_id == "c1"s);
  CHECK_FALSE(back.put_checkpoints[1].message);
  CHECK_FALSE(back.put_checkpoints[1].metadata);
  CHECK_FALSE(back.put_checkpoints[1].parent_id);
  REQUIRE(back.put_sessions.size() == 1);
  CHECK(back.put_sessions[0].head == "c2"s);
  CHECK_FALSE(back.put_sessions[0].exec_settings);
  REQUIRE(back.set_heads.size() == 1);
  CHECK_FALSE(back.set_heads[0].head);
  REQUIRE(back.set_exec_settings.size() == 1);
  CHECK(back.set_exec_settings[0].settings == R"({"max_runs":2})"s);
}
