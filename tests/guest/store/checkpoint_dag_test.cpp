// SPDX-License-Identifier: Apache-2.0
#include "guest/store/checkpoint_dag.hpp"
#include "messages/results/checkpoints_json.hpp"

#include <doctest/doctest.h>

using namespace allox;
using namespace std::string_literals;
using store::checkpoint_dag;

namespace {

checkpoint_row row(const std::string& id, int64_t t) {
  checkpoint_row r;
  r.agent_id = "a";
  r.session_id = "s";
  r.checkpoint_id = id;
  r.created_at_ns = t;
  r.origin = "test";
  return r;
}

std::vector<std::string> strings(std::vector<std::string> ids) {
  return ids;
}

/// Records as the native wire spells them.
json::array wire(const std::vector<checkpoint_record>& recs) {
  json::array out;
  for (const auto& r : recs)
    out.emplace_back(to_json(r));
  return out;
}

} // namespace

TEST_CASE("dag: add chains checkpoints under the head") {
  checkpoint_dag dag;
  dag.add(row("c1", 1));
  dag.add(row("c2", 2));
  dag.add(row("c3", 3));
  CHECK(dag.head() == "c3"s);
  CHECK(dag.find("c2")->parent_id == "c1"s);
  CHECK_FALSE(dag.find("c1")->parent_id);
  CHECK(strings(dag.child_ids("c2")) == std::vector<std::string>{"c3"});
  CHECK(strings(dag.child_ids("c3")) == std::vector<std::string>{"__live__"});
}

TEST_CASE("dag: ancestors 1/2/3 and the end of the lineage") {
  checkpoint_dag dag;
  CHECK(message_of(dag.ancestor(1).error()) ==
        "checkpoint lineage has no head");
  dag.add(row("c1", 1));
  dag.add(row("c2", 2));
  dag.add(row("c3", 3));
  CHECK(*dag.ancestor(1) == "c3");
  CHECK(*dag.ancestor(2) == "c2");
  CHECK(*dag.ancestor(3) == "c1");
  CHECK(message_of(dag.ancestor(4).error()) ==
        "checkpoint lineage ends before ancestor 4");
  CHECK(message_of(dag.ancestor(0).error()) == "num_ancestors must be >= 1");
}

TEST_CASE("dag: a checkpoint after moving the head starts a branch") {
  checkpoint_dag dag;
  dag.add(row("c1", 1));
  dag.add(row("c2", 2));
  dag.move_head("c1");
  dag.add(row("c3", 3));
  CHECK(dag.find("c3")->parent_id == "c1"s);
  CHECK(strings(dag.child_ids("c1")) == std::vector<std::string>{"c2", "c3"});
  CHECK(strings(dag.child_ids("c3")) == std::vector<std::string>{"__live__"});
  CHECK(dag.common_ancestor("c2", "c3") == "c1"s);
  CHECK(dag.common_ancestor("c1", "c3") == "c1"s);
}

TEST_CASE("dag: exact id, unique prefix, ambiguous prefix") {
  checkpoint_dag dag;
  dag.add(row("abc1", 1));
  dag.add(row("abc2", 2));
  dag.add(row("abd", 3));
  dag.add(row("ab", 4));
  CHECK(*dag.resolve("ab") == "ab"); // exact wins over prefix
  CHECK(*dag.resolve("abd") == "abd");
  CHECK(*dag.resolve("abc1") == "abc1");
  auto amb = dag.resolve("abc");
  REQUIRE_FALSE(amb);
  CHECK(message_of(amb.error()) == "checkpoint prefix is ambiguous: abc");
  auto none = dag.resolve("zz");
  CHECK(message_of(none.error()) == "checkpoint does not exist: zz");
  dag.set_missing("abc2", true);
  CHECK(*dag.resolve("abc") == "abc1"); // missing entries never resolve
}

TEST_CASE("dag: removal re-parents children and moves a removed head") {
  checkpoint_dag dag;
  dag.add(row("c1", 1));
  dag.add(row("c2", 2));
  dag.add(row("c3", 3));
  auto changed = dag.remove("c2");
  REQUIRE(changed.size() == 1);
  CHECK(changed[0].checkpoint_id == "c3");
  CHECK(dag.find("c3")->parent_id == "c1"s);
  dag.remove("c3");
  CHECK(dag.head() == "c1"s);
  CHECK(strings(dag.child_ids("c1")) == std::vector<std::string>{"__live__"});
  dag.remove("c1");
  CHECK_FALSE(dag.head());
}

TEST_CASE("dag: records are sorted by creation time and id") {
  checkpoint_dag dag;
  dag.add(row("b", 5));
  dag.add(row("a", 5));
  dag.add(row("c", 1));
  auto recs = wire(dag.records());
  REQUIRE(recs.size() == 3);
  CHECK(recs[0].as_object().at("checkpoint_id") == "c");
  CHECK(recs[1].as_object().at("checkpoint_id") == "a");
  CHECK(recs[2].as_object().at("checkpoint_id") == "b");
  bool more = false;
  auto page = wire(dag.records("c", 1, &more));
  REQUIRE(page.size() == 1);
  CHECK(page[0].as_object().at("checkpoint_id") == "a");
  CHECK(more);
  page = wire(dag.records("a", 5, &more));
  CHECK(page.size() == 1);
  CHECK_FALSE(more);
  CHECK(page[0].as_object().at("checkpoint_id") == "b");
  CHECK(page[0].as_object().at("child_ids") == json::array{"a"});
  auto& rec = recs[2].as_object();
  CHECK(rec.at("message").is_null());
  CHECK(rec.at("metadata").is_null());
  CHECK(rec.at("parent_id").is_null());
}

TEST_CASE("dag: a page lists the children of its records in creation order") {
  checkpoint_dag dag;
  dag.add(row("root", 1));
  dag.add(row("late", 9)); // created last, added first
  dag.move_head("root");
  dag.add(row("early", 2));
  dag.move_head("root");
  bool more = false;
  auto page = wire(dag.records("", 1, &more));
  CHECK(more);
  REQUIRE(page.size() == 1);
  CHECK(page[0].as_object().at("child_ids") ==
        json::array{"early", "late", "__live__"});
  CHECK(to_json(dag.record(*dag.find("root"))).at("child_ids") ==
        page[0].as_object().at("child_ids"));
}
