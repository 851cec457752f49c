// SPDX-License-Identifier: Apache-2.0
// Directory watches on the real kernel's inotify: each kind of change with
// its name below the watched directory, new directories of a recursive
// watch watched as they appear (and what they held reported), a flat watch
// blind below its directory, and symlinks never followed.
#include "guest/os/dir_watch.hpp"

#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

using namespace allox;
using namespace allox::test;

namespace {

std::vector<std::string> drain(os::dir_watch& w,
                               const os::workspace_root& root) {
  bool lost = false;
  auto changes = w.read(root, lost);
  REQUIRE(changes);
  CHECK_FALSE(lost);
  std::vector<std::string> out;
  for (const auto& c : *changes)
    out.push_back(std::string{to_string(c.kind)} + " " + c.name);
  return out;
}

bool has(const std::vector<std::string>& all, const std::string& one) {
  return std::find(all.begin(), all.end(), one) != all.end();
}

} // namespace

TEST_CASE("dir watch: changes are named below the watched directory") {
  temp_dir dir;
  ::mkdir((dir / "w").c_str(), 0755);
  auto root = std::move(*os::workspace_root::open(dir.path()));
  auto w = os::dir_watch::open(root, "w", false);
  REQUIRE(w);
  CHECK(drain(*w, root).empty());
  write_file(dir / "w/a.txt", "one");
  ::chmod((dir / "w/a.txt").c_str(), 0600);
  REQUIRE(::rename((dir / "w/a.txt").c_str(), (dir / "w/b.txt").c_str()) == 0);
  ::unlink((dir / "w/b.txt").c_str());
  auto seen = drain(*w, root);
  CHECK(seen == std::vector<std::string>{"create a.txt", "write a.txt",
                                         "chmod a.txt", "rename a.txt",
                                         "create b.txt", "remove b.txt"});
  CHECK(drain(*w, root).empty());
}

TEST_CASE("dir watch: a recursive watch follows new directories, a flat "
          "one stays at its level") {
  temp_dir dir;
  ::mkdir((dir / "w").c_str(), 0755);
  ::mkdir((dir / "w/old").c_str(), 0755);
  auto root = std::move(*os::workspace_root::open(dir.path()));
  auto deep = os::dir_watch::open(root, "w", true);
  auto flat = os::dir_watch::open(root, "w", false);
  REQUIRE(deep);
  REQUIRE(flat);
  write_file(dir / "w/old/x", "x");
  ::mkdir((dir / "w/new").c_str(), 0755);
  ::mkdir((dir / "w/new/inner").c_str(), 0755);
  write_file(dir / "w/new/inner/early", "before the watch");
  auto first = drain(*deep, root);
  CHECK(has(first, "create old/x"));
  CHECK(has(first, "create new"));
  // Made before the new directory was watched: reported from a listing.
  CHECK(has(first, "create new/inner"));
  CHECK(has(first, "create new/inner/early"));
  write_file(dir / "w/new/inner/late", "after");
  auto second = drain(*deep, root);
  CHECK(has(second, "create new/inner/late"));
  auto level = drain(*flat, root);
  CHECK(has(level, "create new"));
  CHECK_FALSE(has(level, "create old/x"));
  CHECK_FALSE(has(level, "create new/inner/late"));
}

TEST_CASE("dir watch: symlinks lead no watch out, files are refused") {
  temp_dir dir;
  temp_dir outside;
  ::mkdir((dir / "w").c_str(), 0755);
  REQUIRE(::symlink(outside.path().c_str(), (dir / "w/out").c_str()) == 0);
  REQUIRE(::symlink(outside.path().c_str(), (dir / "link").c_str()) == 0);
  write_file(dir / "file", "x");
  auto root = std::move(*os::workspace_root::open(dir.path()));
  CHECK_FALSE(os::dir_watch::open(root, "link", true));
  auto not_dir = os::dir_watch::open(root, "file", false);
  REQUIRE_FALSE(not_dir);
  CHECK(code_of(not_dir.error()) == errc::invalid_argument);
  auto w = os::dir_watch::open(root, "w", true);
  REQUIRE(w);
  write_file(outside / "secret", "not seen");
  CHECK(drain(*w, root).empty());
}
