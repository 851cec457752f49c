// SPDX-License-Identifier: Apache-2.0
// Intent records on plain file systems: ext4 under /tmp for ordinary rows,
// tmpfs for rows split over several attributes (ext4 keeps all of a file's
// attributes in one block). Btrfs is covered by the crash tests.
#include "guest/store/create_intent.hpp"

#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/xattr.h>

#include <filesystem>

using namespace allox;
using namespace std::string_literals;

namespace {

checkpoint_row sample_row(const std::string& id) {
  checkpoint_row row;
  row.agent_id = "a";
  row.session_id = "s";
  row.checkpoint_id = id;
  row.created_at_ns = 1234567890123;
  row.origin = "test";
  row.parent_id = "parent";
  return row;
}

void make_checkpoints_dir(const store::layout& l) {
  std::filesystem::create_directories(l.checkpoints_dir("a", "s"));
}

} // namespace

TEST_CASE("create intent: a row survives the round trip") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_checkpoints_dir(l);
  auto row = sample_row("cp-1");
  row.message = ""s; // empty, not null
  row.metadata = R"({"k":[1,2]})";
  row.pinned = true;
  REQUIRE_FALSE(store::write_create_intent(l, row));
  CHECK(store::create_intents(l, "a", "s") == std::vector<std::string>{"cp-1"});
  auto back = store::read_create_intent(l, "a", "s", "cp-1");
  REQUIRE(back);
  CHECK(back->agent_id == "a");
  CHECK(back->session_id == "s");
  CHECK(back->created_at_ns == row.created_at_ns);
  CHECK(back->origin == "test");
  CHECK(back->parent_id == "parent"s);
  CHECK(back->message == ""s);
  CHECK(back->metadata == row.metadata);
  CHECK(back->pinned);
  REQUIRE_FALSE(store::clear_create_intent(l, "a", "s", "cp-1"));
  CHECK(store::create_intents(l, "a", "s").empty());
  CHECK_FALSE(store::clear_create_intent(l, "a", "s", "cp-1")); // idempotent
  auto gone = store::read_create_intent(l, "a", "s", "cp-1");
  REQUIRE_FALSE(gone);
  CHECK(code_of(gone.error()) == errc::not_found);
}

TEST_CASE("create intent: large rows are split and a rewrite drops stale "
          "chunks") {
  test::temp_dir dir{"allox-test-", "/dev/shm"};
  store::layout l{dir.path()};
  make_checkpoints_dir(l);
  auto big = sample_row("big");
  big.message = std::string(4 * store::intent_chunk_bytes + 17, 'm');
  REQUIRE_FALSE(store::write_create_intent(l, big));
  auto back = store::read_create_intent(l, "a", "s", "big");
  REQUIRE(back);
  CHECK(back->message == big.message);
  // An earlier attempt left more chunks than the new row has.
  auto small = sample_row("big");
  small.origin = "retry";
  REQUIRE_FALSE(store::write_create_intent(l, small));
  back = store::read_create_intent(l, "a", "s", "big");
  REQUIRE(back);
  CHECK(back->origin == "retry");
  CHECK_FALSE(back->message);
}

TEST_CASE("create intent: a damaged record is an error, not a row") {
  test::temp_dir dir;
  store::layout l{dir.path()};
  make_checkpoints_dir(l);
  REQUIRE_FALSE(store::write_create_intent(l, sample_row("x")));
  auto path = store::intent_path(l, "a", "s", "x");
  std::string junk = "{\"checkpoint_id\":";
  REQUIRE(::setxattr(path.c_str(), "trusted.allox.intent.0", junk.data(),
                     junk.size(), 0) == 0);
  auto r = store::read_create_intent(l, "a", "s", "x");
  REQUIRE_FALSE(r);
  CHECK(code_of(r.error()) == errc::invalid_argument);
  // A record naming another checkpoint is refused too.
  REQUIRE_FALSE(store::write_create_intent(l, sample_row("y")));
  REQUIRE(::rename(store::intent_path(l, "a", "s", "y").c_str(),
                   store::intent_path(l, "a", "s", "z").c_str()) == 0);
  auto other = store::read_create_intent(l, "a", "s", "z");
  REQUIRE_FALSE(other);
  CHECK(code_of(other.error()) == errc::invalid_argument);
}
