// SPDX-License-Identifier: Apache-2.0
// The intervals of write provenance (actors/session/write_sets.hpp): what
// each checkpoint's interval holds when records arrive around its seal.
#include "actors/session/write_sets.hpp"

#include "bpf/process.h"

#include <doctest/doctest.h>

using namespace allox;

namespace {

file_writer writer(const std::string& process, uint32_t op, uint64_t t) {
  file_writer w;
  w.run_id = "run-1";
  w.process_id = process;
  w.pid = 7;
  w.ops = 1u << op;
  w.first_ns = w.last_ns = t;
  return w;
}

std::vector<std::string> processes(const write_interval* i, uint64_t ino) {
  std::vector<std::string> out;
  if (i == nullptr)
    return out;
  auto it = i->by_inode.find(ino);
  if (it != i->by_inode.end())
    for (const auto& w : it->second)
      out.push_back(w.process_id);
  return out;
}

} // namespace

TEST_CASE("write sets: a seal splits the records by the snapshot's time") {
  write_sets s;
  s.add(10, 1, writer("p", ALLOX_WRITE_DATA, 10));   // before
  s.add(100, 2, writer("q", ALLOX_WRITE_DATA, 100)); // during
  s.add(300, 3, writer("r", ALLOX_WRITE_DATA, 300)); // after, before seal
  s.add(15, 1, writer("p", ALLOX_WRITE_CREATE, 15)); // merged with p
  s.seal("c1", 50, 200);
  const auto* c1 = s.sealed("c1");
  REQUIRE(c1 != nullptr);
  CHECK(processes(c1, 1) == std::vector<std::string>{"p"});
  CHECK(write_op_names(c1->by_inode.at(1)[0].ops) ==
        std::vector<std::string>{"write", "create"});
  // Written during the snapshot: in both intervals, since which side of
  // it the write fell is unknown.
  CHECK(processes(c1, 2) == std::vector<std::string>{"q"});
  CHECK(processes(&s.live(), 2) == std::vector<std::string>{"q"});
  // After the snapshot: the next interval's only.
  CHECK(processes(c1, 3).empty());
  CHECK(processes(&s.live(), 3) == std::vector<std::string>{"r"});
  CHECK(processes(&s.live(), 1).empty());

  // Records that arrive after the seal (the reader batches) go by their
  // time: before the snapshot to the sealed interval only, during it to
  // both, after it to the live one only.
  s.add(40, 6, writer("early", ALLOX_WRITE_DATA, 40));
  s.add(150, 4, writer("late", ALLOX_WRITE_DATA, 150));
  s.add(250, 5, writer("next", ALLOX_WRITE_DATA, 250));
  CHECK(processes(s.sealed("c1"), 6) == std::vector<std::string>{"early"});
  CHECK(processes(&s.live(), 6).empty());
  CHECK(processes(s.sealed("c1"), 4) == std::vector<std::string>{"late"});
  CHECK(processes(&s.live(), 4) == std::vector<std::string>{"late"});
  CHECK(processes(s.sealed("c1"), 5).empty());
  CHECK(processes(&s.live(), 5) == std::vector<std::string>{"next"});
}

TEST_CASE("write sets: changes by name, losses, rollback and deletion") {
  write_sets s;
  s.add(10, named_change{256, 256, "gone.txt", false,
                         writer("rm", ALLOX_WRITE_UNLINK, 10), false});
  s.lose(3, true);
  s.seal("c1", 20, 30);
  REQUIRE(s.sealed("c1") != nullptr);
  CHECK(s.sealed("c1")->by_name.size() == 1);
  CHECK(s.sealed("c1")->lost == 3);
  CHECK(s.live().by_name.empty());
  CHECK(s.live().lost == 0);

  s.add(40, 9, writer("p", ALLOX_WRITE_DATA, 40));
  s.seal("c2", 50, 60);
  // Deleting c1 folds its interval into its child's, which now starts
  // where c1's did.
  s.drop("c1", {"c2"});
  CHECK(s.sealed("c1") == nullptr);
  CHECK(s.sealed("c2")->by_name.size() == 1);
  CHECK(s.sealed("c2")->lost == 3);
  CHECK(processes(s.sealed("c2"), 9) == std::vector<std::string>{"p"});

  // A rollback starts afresh: nothing arrives in a sealed interval after.
  s.add(70, 10, writer("x", ALLOX_WRITE_DATA, 70));
  s.restart();
  CHECK(s.live().empty());
  s.add(55, 11, writer("y", ALLOX_WRITE_DATA, 55));
  CHECK(processes(s.sealed("c2"), 11).empty());
  CHECK(processes(&s.live(), 11) == std::vector<std::string>{"y"});
}

TEST_CASE("write sets: an interval survives the catalog's text") {
  write_interval i;
  i.add(257, writer("p1", ALLOX_WRITE_DATA, 5));
  i.add(257, writer("p2", ALLOX_WRITE_TRUNCATE, 6));
  auto daemon = writer("", ALLOX_WRITE_DATA, 7);
  daemon.run_id.clear();
  daemon.action = "file.write";
  daemon.origin = "rpc";
  i.add(named_change{0, 0, "/workspace/a/b", true, daemon, true});
  i.lost = 4;
  i.commands["run-1"] = {"sh", "-c", "echo > x"};
  i.exes["p1"] = "/usr/bin/sh";
  auto back = decode_write_interval(encode(i));
  REQUIRE(back);
  CHECK(back->lost == 4);
  CHECK(processes(&*back, 257) == std::vector<std::string>{"p1", "p2"});
  REQUIRE(back->by_name.size() == 1);
  const auto& c = back->by_name.front();
  CHECK(c.path == "/workspace/a/b");
  CHECK(c.absolute);
  CHECK(c.subtree);
  CHECK(c.writer.action == "file.write");
  CHECK(c.writer.origin == "rpc");
  CHECK(c.writer.ops == 1u << ALLOX_WRITE_DATA);
  CHECK(back->commands.at("run-1") ==
        std::vector<std::string>{"sh", "-c", "echo > x"});
  CHECK(back->exes.at("p1") == "/usr/bin/sh");
  // Bad text is an error, never a partial interval.
  CHECK(!decode_write_interval("not json"));
  CHECK(!decode_write_interval("{\"version\": 2}"));
  CHECK(!decode_write_interval(
      "{\"version\": 1, \"lost\": 0, \"inodes\": [{\"ino\": 1}], "
      "\"names\": []}"));
  // A writer index past the table.
  CHECK(!decode_write_interval(
      "{\"version\": 1, \"lost\": 0, \"writers\": [], \"inodes\": "
      "[[5, 0, 2]], \"names\": []}"));
  // A name that is not UTF-8 (a path is bytes) still reads back.
  write_interval odd;
  odd.add(named_change{1, 2, "bad\xff\"name\n", false, daemon, false});
  auto read = decode_write_interval(encode(odd));
  REQUIRE(read);
  CHECK(read->by_name.front().path == "bad\xef\xbf\xbd\"name\n");
}
