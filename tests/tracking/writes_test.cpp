// SPDX-License-Identifier: Apache-2.0
// Write provenance on the real kernel: processes of a tracked run change
// files on a scratch Btrfs every way the LSM and fexit programs record,
// and each change comes back as a record naming the process, the inode
// and the operation. Needs root and a free loop device.
#include "tests/tracking/tracking_fixture.hpp"

#include "guest/os/btrfs.hpp"
#include "tests/fixtures/scratch_btrfs.hpp"
#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>
#include <tuple>

using namespace allox;
using namespace allox::test;
using namespace allox::tracking;

namespace {

/// A Btrfs on a loop device with one subvolume, `ws`, for the files.
class scratch_workspace {
public:
  scratch_workspace() {
    ws_ = disk_.root() + "/ws";
    REQUIRE_FALSE(os::create_subvolume(ws_));
    auto id = os::subvolume_id(ws_);
    REQUIRE(id);
    subvol_ = *id;
  }

  const std::string& ws() const { return ws_; }
  std::string at(const std::string& name) const { return ws_ + "/" + name; }
  uint64_t subvol() const { return subvol_; }

  uint64_t ino(const std::string& name) const {
    struct stat st {};
    REQUIRE(::lstat(at(name).c_str(), &st) == 0);
    return st.st_ino;
  }

private:
  test::scratch_btrfs disk_{256ull << 20, "allox-writes-"};
  std::string ws_;
  uint64_t subvol_ = 0;
};

/// The ops recorded per inode and process (tgid).
using ops_by_process = std::map<uint32_t, std::set<std::string>>;

std::map<uint64_t, ops_by_process>
by_inode(const std::vector<write_event>& writes, uint64_t subvol) {
  std::map<uint64_t, ops_by_process> out;
  for (const auto& w : writes) {
    CHECK(w.subvol == subvol);
    out[w.ino][w.hdr.process.tgid].insert(std::string{write_op_name(w.op)});
  }
  return out;
}

std::set<std::string> ops(std::initializer_list<const char*> names) {
  return {names.begin(), names.end()};
}

/// "a,b,c", for messages.
std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ",") + n;
  return out;
}

} // namespace

TEST_CASE("write provenance: every way of changing a file is recorded once, "
          "by inode or by name, for the process that did it") {
  scratch_workspace fs;
  // The files write-all changes, made beforehand by this (untracked)
  // process: none of this is recorded.
  for (const char* name :
       {"pwrite.txt", "writev.txt", "trunc.txt", "shrink.txt", "chmod.txt",
        "old.txt", "gone.txt", "linked.txt"})
    write_file(fs.at(name), "0123456789");
  write_file(fs.at("mmap.txt"), std::string(4096, 'x'));
  REQUIRE(::mkdir(fs.at("emptydir").c_str(), 0755) == 0);

  collector c;
  REQUIRE(c.probe().writes_on());
  CHECK(c.probe().writes_error() == "");
  scratch_cgroup group;
  constexpr uint64_t cookie = 301;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));
  CHECK(group.run({tracking_helper(), "write-all", fs.ws()}) == 0);
  REQUIRE(c.drain(cookie, group));

  auto writes = c.writes(cookie);
  CHECK(c.writes(0).size() == writes.size()); // nothing from elsewhere
  auto got = by_inode(writes, fs.subvol());
  // The helper is the run's root; the orphan its only other writer.
  auto forks = only<fork_event>(c.of(cookie));
  uint32_t helper = 0;
  for (const auto& f : forks)
    if (f.hdr.root)
      helper = f.hdr.process.tgid;
  REQUIRE(helper != 0);
  auto expect = [&](uint64_t ino, std::set<std::string> want,
                    const std::string& what) {
    INFO(what);
    REQUIRE(got.count(ino) == 1);
    REQUIRE(got[ino].size() == 1);
    CHECK(got[ino].begin()->first == helper);
    CHECK(joined(got[ino].begin()->second) == joined(want));
  };
  // By inode: what a descriptor or a new inode names.
  expect(fs.ino("created.txt"), ops({"create", "write"}), "created.txt");
  expect(fs.ino("pwrite.txt"), ops({"write"}), "pwrite.txt");
  expect(fs.ino("writev.txt"), ops({"write"}), "writev.txt");
  expect(fs.ino("mmap.txt"), ops({"write"}), "mmap.txt");
  expect(fs.ino("trunc.txt"), ops({"write", "truncate"}), "trunc.txt");
  expect(fs.ino("old.txt"), ops({"create", "write"}),
         "new.txt, renamed over old.txt");
  expect(fs.ino("symlink"), ops({"symlink"}), "symlink");
  expect(fs.ino("dir"), ops({"mkdir"}), "dir");
  expect(fs.ino("thread.txt"), ops({"create", "write"}), "thread.txt");
  bool from_thread = false;
  for (const auto& w : writes)
    if (w.ino == fs.ino("thread.txt"))
      from_thread = w.tid != w.hdr.process.tgid;
  CHECK(from_thread);

  // The double-forked setsid child: a process of the run, not the helper.
  auto orphan = got[fs.ino("orphan.txt")];
  REQUIRE(orphan.size() == 1);
  CHECK(orphan.begin()->first != helper);
  CHECK(orphan.begin()->second == ops({"create", "write"}));
  bool born_in_run = false;
  for (const auto& f : forks)
    born_in_run |= f.hdr.process.tgid == orphan.begin()->first;
  CHECK(born_in_run);
  CHECK(got.size() == 10);

  // By name: what the process named, as it named it (absolute here).
  std::map<std::string, std::set<std::string>> named;
  for (const auto& p : c.write_paths(cookie)) {
    CHECK(p.hdr.process.tgid == helper);
    CHECK(p.absolute);
    CHECK_FALSE(p.truncated);
    named[p.path].insert(std::string{write_op_name(p.op)});
  }
  CHECK(named == std::map<std::string, std::set<std::string>>{
                     {fs.at("shrink.txt"), ops({"truncate"})},
                     {fs.at("chmod.txt"), ops({"setattr"})},
                     {fs.at("new.txt"), ops({"rename"})},
                     {fs.at("old.txt"), ops({"replace"})},
                     {fs.at("gone.txt"), ops({"unlink"})},
                     {fs.at("hardlink.txt"), ops({"link"})},
                     {fs.at("emptydir"), ops({"rmdir"})}});

  // Write sequences are the run's own, 1..n, none lost.
  auto counters = c.probe().counters(cookie);
  REQUIRE(counters);
  CHECK(counters->write_sequences ==
        writes.size() + c.write_paths(cookie).size());
  CHECK(counters->writes_lost == 0);
}

TEST_CASE("write provenance: a loop of writes is one record per write "
          "generation") {
  scratch_workspace fs;
  collector c;
  scratch_cgroup group;
  constexpr uint64_t cookie = 302;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));
  CHECK(group.run(
            {tracking_helper(), "write-loop", fs.at("loop.bin"), "2000"}) == 0);
  REQUIRE(c.drain(cookie, group));
  // 2,000 pwrites through one descriptor and 2,000 open/write/close.
  auto first = by_inode(c.writes(cookie), fs.subvol());
  REQUIRE(first.size() == 1);
  CHECK(first.begin()->second.begin()->second == ops({"create", "write"}));
  CHECK(c.writes(cookie).size() == 2);
}

TEST_CASE("write provenance: a new write generation records the same "
          "process's write again") {
  scratch_workspace fs;
  collector c;
  scratch_cgroup group;
  constexpr uint64_t cookie = 306;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));
  auto child = group.start(
      {tracking_helper(), "write-after", fs.at("twice"), fs.at("go")});
  // The first write: create and write.
  REQUIRE(eventually([&] { return c.writes(cookie).size() == 2; }));
  // A sealed write set: from here on the same write is new again.
  c.probe().next_write_generation();
  write_file(fs.at("go"), "");
  CHECK(sandbox::wait_child(child) == 0);
  REQUIRE(c.drain(cookie, group));
  auto writes = c.writes(cookie);
  REQUIRE(writes.size() == 3);
  CHECK(writes[2].ino == fs.ino("twice"));
  CHECK(std::string{write_op_name(writes[2].op)} == "write");
  CHECK(writes[2].hdr.process == writes[0].hdr.process);
}

TEST_CASE("write provenance: a shell's redirections, mv and rm name the "
          "process that did each, relative to its working directory") {
  scratch_workspace fs;
  write_file(fs.at("doomed"), "x");
  collector c;
  scratch_cgroup group;
  constexpr uint64_t cookie = 303;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));
  CHECK(group.run(
            shell("cd " + fs.ws() +
                  " && echo hi > out.txt && mv out.txt moved.txt && "
                  "rm doomed && { rm nothing-here 2>/dev/null; true; }")) == 0);
  REQUIRE(c.drain(cookie, group));
  std::map<uint32_t, std::string> comm_of;
  for (const auto& x : only<exec_event>(c.of(cookie)))
    comm_of[x.hdr.process.tgid] = x.comm;
  // The shell created and wrote out.txt (whose inode moved.txt keeps).
  auto got = by_inode(c.writes(cookie), fs.subvol());
  auto moved = got[fs.ino("moved.txt")];
  REQUIRE(moved.size() == 1);
  CHECK(comm_of[moved.begin()->first] == "sh");
  CHECK(moved.begin()->second == ops({"create", "write"}));
  // mv and rm, by name relative to the workspace root; the failed rm is
  // not there.
  std::set<std::tuple<std::string, std::string, std::string>> named;
  for (const auto& p : c.write_paths(cookie)) {
    CHECK_FALSE(p.absolute);
    CHECK(p.subvol == fs.subvol());
    CHECK(p.dir_ino == fs.ino("."));
    named.insert({comm_of[p.hdr.process.tgid], p.path,
                  std::string{write_op_name(p.op)}});
  }
  CHECK(named == std::set<std::tuple<std::string, std::string, std::string>>{
                     {"mv", "out.txt", "rename"},
                     {"mv", "moved.txt", "replace"},
                     {"rm", "doomed", "unlink"}});
}

TEST_CASE("write provenance: outside a tracked run nothing is recorded") {
  scratch_workspace fs;
  collector c;
  scratch_cgroup tracked;
  scratch_cgroup untracked;
  constexpr uint64_t cookie = 304;
  REQUIRE_FALSE(c.probe().track(tracked.id(), cookie));
  CHECK(untracked.run({tracking_helper(), "write-all", fs.ws()}) != 2);
  write_file(fs.at("by-the-test.txt"), "x");
  CHECK(tracked.run({"/bin/true"}) == 0);
  REQUIRE(c.drain(cookie, tracked));
  CHECK(c.writes(0).empty());
  CHECK(c.write_paths(0).empty());
}

TEST_CASE("write provenance: a full ring counts lost write records for the "
          "run, without failing its process events' sequence") {
  scratch_workspace fs;
  bpf::probe_options opts;
  opts.ring_bytes = static_cast<uint32_t>(::sysconf(_SC_PAGESIZE));
  collector c{opts, {}, false};
  scratch_cgroup group;
  constexpr uint64_t cookie = 305;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));
  // 200 new files, each created, truncated and written: hundreds of
  // records of 80 bytes cannot fit a page nobody reads.
  CHECK(group.run(shell("i=0; while [ $i -lt 200 ]; do : > " + fs.ws() +
                        "/f$i; i=$((i+1)); done")) == 0);
  REQUIRE(group.wait_empty());
  auto counters = c.probe().counters(cookie);
  REQUIRE(counters);
  CHECK(counters->writes_lost > 0);
  CHECK(counters->write_sequences >= 400);
  auto losses = c.probe().losses();
  REQUIRE(losses);
  CHECK(losses->by_cause[ALLOX_LOSS_RINGBUF_WRITE] == counters->writes_lost);
}
