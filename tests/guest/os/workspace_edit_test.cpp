// SPDX-License-Identifier: Apache-2.0
// file.search and file.replace below the actors: fixed strings, extended
// regular expressions, globs over names and paths, binary and oversized
// files skipped, every bound, symlinks never followed; exact edits that
// change nothing unless the count matches, and keep the file's mode.
#include "guest/os/workspace_edit.hpp"

#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

using namespace allox;
using namespace allox::test;

namespace {

struct tree {
  temp_dir dir;
  os::workspace_root root;

  tree() : root(std::move(*os::workspace_root::open(dir.path()))) {
    ::mkdir((dir / "src").c_str(), 0755);
    ::mkdir((dir / "src/lib").c_str(), 0755);
    write_file(dir / "src/a.ts", "const a = 1;\n// TODO: fix\nexport {a};\n");
    write_file(dir / "src/lib/b.ts", "let todo = 'TODO';\n");
    write_file(dir / "src/c.md", "TODO in markdown\n");
    write_file(dir / "bin.dat", std::string("TODO\0binary", 11));
  }
};

std::vector<std::string> lines(const search_result& r) {
  std::vector<std::string> out;
  for (const auto& m : r.matches)
    out.push_back(m.path + ":" + std::to_string(m.line) + ":" + m.text);
  return out;
}

} // namespace

TEST_CASE("workspace edit: a fixed string is found line by line, sorted by "
          "path, binary files skipped") {
  tree t;
  auto r = os::search_files(t.root, "", "TODO", "", false, {});
  REQUIRE(r);
  CHECK(lines(*r) == std::vector<std::string>{"src/a.ts:2:// TODO: fix",
                                              "src/c.md:1:TODO in markdown",
                                              "src/lib/b.ts:1:let todo = "
                                              "'TODO';"});
  CHECK(r->files ==
        std::vector<std::string>{"src/a.ts", "src/c.md", "src/lib/b.ts"});
  CHECK(r->files_scanned == 4);
  CHECK_FALSE(r->truncated);
}

TEST_CASE("workspace edit: globs match names, or paths when they have a "
          "slash, an empty pattern lists the files") {
  tree t;
  auto ts = os::search_files(t.root, "src", "TODO", "*.ts", false, {});
  REQUIRE(ts);
  CHECK(ts->files == std::vector<std::string>{"src/a.ts", "src/lib/b.ts"});
  auto top = os::search_files(t.root, "src", "", "lib/*.ts", false, {});
  REQUIRE(top);
  CHECK(top->files == std::vector<std::string>{"src/lib/b.ts"});
  CHECK(top->matches.empty());
  CHECK(os::glob_matches("", "x/y"));
  CHECK(os::glob_matches("*.md", "docs/a.md"));
  CHECK_FALSE(os::glob_matches("*.md", "docs/a.mdx"));
}

TEST_CASE("workspace edit: extended regular expressions, and a bad one "
          "refused") {
  tree t;
  auto r = os::search_files(t.root, "", "^(const|let) [a-z]+ =", "", true, {});
  REQUIRE(r);
  CHECK(lines(*r) ==
        std::vector<std::string>{"src/a.ts:1:const a = 1;",
                                 "src/lib/b.ts:1:let todo = 'TODO';"});
  auto bad = os::search_files(t.root, "", "(", "", true, {});
  REQUIRE_FALSE(bad);
  CHECK(code_of(bad.error()) == errc::invalid_argument);
}

TEST_CASE("workspace edit: the bounds cut a search and say so") {
  tree t;
  os::search_bounds few;
  few.matches = 1;
  auto r = os::search_files(t.root, "", "TODO", "", false, few);
  REQUIRE(r);
  CHECK(r->matches.size() == 1);
  CHECK(r->truncated);
  os::search_bounds small;
  small.file_size = 20;
  auto s = os::search_files(t.root, "", "TODO", "", false, small);
  REQUIRE(s);
  CHECK(s->files == std::vector<std::string>{"src/c.md", "src/lib/b.ts"});
  // A long line is shown cut.
  write_file(t.dir / "long.txt", std::string(2000, 'x') + "needle\n");
  auto l = os::search_files(t.root, "", "needle", "", false, {});
  REQUIRE(l);
  REQUIRE(l->matches.size() == 1);
  CHECK(l->matches[0].text.size() == os::max_search_line);
}

TEST_CASE("workspace edit: symlinks are not followed, paths stay beneath") {
  tree t;
  temp_dir outside;
  write_file(outside / "secret.txt", "TODO secret\n");
  REQUIRE(::symlink((outside / "secret.txt").c_str(),
                    (t.dir / "link.txt").c_str()) == 0);
  REQUIRE(::symlink(outside.path().c_str(), (t.dir / "out").c_str()) == 0);
  auto r = os::search_files(t.root, "", "secret", "", false, {});
  REQUIRE(r);
  CHECK(r->matches.empty());
  CHECK_FALSE(os::search_files(t.root, "out", "secret", "", false, {}));
  CHECK_FALSE(os::replace_in_file(t.root, "link.txt", "TODO", "x", 1, 1 << 20));
  CHECK(read_file(outside / "secret.txt") == "TODO secret\n");
}

TEST_CASE("workspace edit: replace changes the file only when the count "
          "matches, and keeps its mode") {
  tree t;
  ::chmod((t.dir / "src/a.ts").c_str(), 0750);
  auto r = os::replace_in_file(t.root, "src/a.ts", "a", "b", 1, 1 << 20);
  REQUIRE_FALSE(r);
  CHECK(code_of(r.error()) == errc::conflict);
  CHECK(message_of(r.error()).find("occurs 2 times") != std::string::npos);
  auto none = os::replace_in_file(t.root, "src/a.ts", "zzz", "b", 1, 1 << 20);
  REQUIRE_FALSE(none);
  CHECK(code_of(none.error()) == errc::not_found);
  CHECK(read_file(t.dir / "src/a.ts") ==
        "const a = 1;\n// TODO: fix\nexport {a};\n");
  auto ok =
      os::replace_in_file(t.root, "src/a.ts", "TODO: fix", "done", 1, 1 << 20);
  REQUIRE(ok);
  CHECK(ok->replacements == 1);
  CHECK(read_file(t.dir / "src/a.ts") ==
        "const a = 1;\n// done\nexport {a};\n");
  CHECK(ok->size == 33);
  auto all = os::replace_in_file(t.root, "src/a.ts", "a", "", 2, 1 << 20);
  REQUIRE(all);
  CHECK(read_file(t.dir / "src/a.ts") == "const  = 1;\n// done\nexport {};\n");
  struct stat sb {};
  REQUIRE(::stat((t.dir / "src/a.ts").c_str(), &sb) == 0);
  CHECK((sb.st_mode & 07777) == 0750);
  auto big = os::replace_in_file(t.root, "src/a.ts", "const", "x", 1, 8);
  REQUIRE_FALSE(big);
  CHECK(code_of(big.error()) == errc::payload_too_large);
  auto dir = os::replace_in_file(t.root, "src", "x", "y", 1, 1 << 20);
  REQUIRE_FALSE(dir);
  CHECK(code_of(dir.error()) == errc::invalid_argument);
}
