// SPDX-License-Identifier: Apache-2.0
// alloxctl's tar packing and unpacking (cli/tarball.cpp): a tree round
// trips, and a hostile stream never writes outside the target directory.
#include "cli/tarball.hpp"

#include "tests/fixtures/temp_dir.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

using namespace allox;

namespace {

/// A tar file at `path` with one regular file per name.
void write_tar(const std::string& path, const std::vector<std::string>& names) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_open_filename(a, path.c_str());
  for (const auto& name : names) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, 3);
    archive_write_header(a, e);
    archive_write_data(a, "bad", 3);
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

} // namespace

TEST_CASE("tarball: a tree round-trips with its symlinks as links") {
  test::temp_dir from, to;
  ::mkdir((from / "sub").c_str(), 0755);
  test::write_file(from / "sub/x.txt", "x");
  test::write_file(from / "y.txt", "y");
  REQUIRE(::symlink("/etc/passwd", (from / "link").c_str()) == 0);
  auto tar = to / "t.tar";
  auto packed = ctl::pack_tree(from.path() + "/", tar);
  REQUIRE(packed);
  auto names = *packed;
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"sub/x.txt", "y.txt"});
  auto unpacked = ctl::unpack_tree(tar, to / "out");
  INFO(unpacked.error().message);
  REQUIRE(unpacked);
  CHECK(unpacked->size() == 2);
  CHECK(test::read_file(to / "out/sub/x.txt") == "x");
  CHECK(test::read_file(to / "out/y.txt") == "y");
  char target[64] = {};
  REQUIRE(::readlink((to / "out/link").c_str(), target, sizeof target - 1) > 0);
  CHECK(std::string{target} == "/etc/passwd");
}

TEST_CASE("tarball: names leaving the directory are refused") {
  for (const char* bad :
       {"../escape", "/tmp/allox-tarball-escape", "ok/../../escape"}) {
    CAPTURE(bad);
    test::temp_dir dir;
    auto tar = dir / "t.tar";
    write_tar(tar, {"fine", bad});
    auto r = ctl::unpack_tree(tar, dir / "out");
    CHECK_FALSE(r);
    CHECK(::access((dir / "escape").c_str(), F_OK) != 0);
    CHECK(::access("/tmp/allox-tarball-escape", F_OK) != 0);
  }
}
