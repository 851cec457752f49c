// SPDX-License-Identifier: Apache-2.0
// checkpoint.diff: exact results on known changes, pagination, and the
// generation search checked against a full walk of both trees on random
// changes, across branches and against the live workspace.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/session_files.hpp"

#include "guest/os/btrfs_diff.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <random>

using namespace allox;
using namespace allox::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> rows(const json::object& diff) {
  std::vector<std::string> out;
  for (const auto& c : diff.at("changes").as_array()) {
    const auto& o = c.as_object();
    out.push_back(std::string{o.at("change").as_string()} + " " +
                  std::string{o.at("path").as_string()});
  }
  return out;
}

std::vector<std::string> rows(const std::vector<os::tree_change>& changes) {
  std::vector<std::string> out;
  for (const auto& c : changes)
    out.push_back(c.change + " " + c.path);
  return out;
}

json::object diff(http_client& c, const std::string& from,
                  const std::string& to = {}, json::object extra = {}) {
  auto p = with(ids("a", "s"), {{"from", from}, {"limit", 10000}});
  if (!to.empty())
    p["to"] = to;
  return expect_ok(c.rpc("checkpoint.diff", with(p, extra)));
}

} // namespace

TEST_CASE("diff: known changes between checkpoints and against current") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto cur = d.current("a", "s");
  fs::create_directories(cur + "/dir/sub");
  write_file(cur + "/dir/sub/f", "1");
  write_file(cur + "/same", "unchanged");
  write_file(cur + "/gone", "x");
  write_file(cur + "/edit", "a");
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "s"), {{"checkpoint_id", "one"}})));
  write_file(cur + "/edit", "b");
  fs::remove(cur + "/gone");
  fs::rename(cur + "/dir", cur + "/moved");
  write_file(cur + "/new", "n");
  ::symlink("same", (cur + "/link").c_str());
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "s"), {{"checkpoint_id", "two"}})));
  auto r = diff(c, "one", "two");
  CHECK(r.at("method") == "generation");
  CHECK(rows(r) == std::vector<std::string>{
                       "deleted dir", "deleted dir/sub", "deleted dir/sub/f",
                       "modified edit", "deleted gone", "added link",
                       "added moved", "added moved/sub", "added moved/sub/f",
                       "added new"});
  CHECK(r.at("counts") ==
        json::object{{"added", 5}, {"modified", 1}, {"deleted", 4}});
  // Nothing unchanged was opened: "same" was never compared.
  CHECK(r.at("stats").as_object().at("compared_paths").to_number<int64_t>() <
        16);
  write_file(cur + "/new", "changed after two");
  auto live = diff(c, "two");
  CHECK(live.at("to").is_null());
  CHECK(rows(live) == std::vector<std::string>{"modified new"});
  // Pagination by path.
  auto page = diff(c, "one", "two", {{"limit", 4}});
  CHECK(rows(page).size() == 4);
  CHECK(page.at("has_more") == true);
  auto rest = diff(c, "one", "two", {{"cursor", page.at("next_cursor")}});
  CHECK(rows(rest).size() == 6);
  CHECK(rest.at("has_more") == false);
  expect_error(
      c.rpc("checkpoint.diff", with(ids("a", "s"), {{"from", "nope"}})), 400,
      "not_found");
  expect_error(c.rpc("checkpoint.diff", ids("a", "s")), 400,
               "invalid_argument");
}

TEST_CASE("diff: the generation search agrees with a full walk on random "
          "changes, branches and the live workspace") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto cur = d.current("a", "s");
  std::mt19937 rng{7};
  std::vector<std::string> files;
  for (int i = 0; i < 40; ++i) {
    auto dir = cur + "/d" + std::to_string(i % 6);
    fs::create_directories(dir);
    auto f = "d" + std::to_string(i % 6) + "/f" + std::to_string(i);
    write_file(cur + "/" + f, std::to_string(i));
    files.push_back(f);
  }
  auto mutate = [&] {
    for (int k = 0; k < 8; ++k) {
      auto& f = files[rng() % files.size()];
      auto path = cur + "/" + f;
      switch (rng() % 4) {
      case 0:
        write_file(path, "edit" + std::to_string(rng()));
        break;
      case 1:
        fs::remove(path);
        break;
      case 2:
        fs::create_directories(cur + "/n" + std::to_string(rng() % 3));
        write_file(cur + "/n" + std::to_string(rng() % 3) + "/x" +
                       std::to_string(rng() % 50),
                   "new");
        break;
      case 3:
        if (fs::exists(path))
          fs::rename(path, path + ".moved");
        break;
      }
    }
  };
  auto cps = d.root() + "/agents/a/workspace/sessions/s/checkpoints/";
  std::vector<std::string> ids_made;
  for (int i = 0; i < 6; ++i) {
    mutate();
    auto id = "c" + std::to_string(i);
    expect_ok(c.rpc("checkpoint.create",
                    with(ids("a", "s"), {{"checkpoint_id", id}})));
    ids_made.push_back(id);
    if (i == 3) // branch from c1
      expect_ok(c.rpc("session.rollback",
                      with(ids("a", "s"), {{"checkpoint_id", "c1"}})));
  }
  mutate();
  for (size_t i = 0; i < ids_made.size(); ++i) {
    for (size_t j = 0; j < ids_made.size(); ++j) {
      if (i == j)
        continue;
      CAPTURE(ids_made[i]);
      CAPTURE(ids_made[j]);
      auto r = diff(c, ids_made[i], ids_made[j]);
      CHECK(r.at("method") == "generation");
      auto walk = os::diff_walk(cps + ids_made[i], cps + ids_made[j]);
      REQUIRE(walk);
      CHECK(rows(r) == rows(*walk));
    }
    auto live = diff(c, ids_made[i]);
    auto walk = os::diff_walk(cps + ids_made[i], cur);
    REQUIRE(walk);
    CHECK(rows(live) == rows(*walk));
  }
}
