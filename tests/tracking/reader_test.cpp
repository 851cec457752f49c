// SPDX-License-Identifier: Apache-2.0
// Process tracking end to end on the real kernel: processes started in
// scratch cgroups the way the daemon starts runs, the probe attributing
// them, the reader delivering the events. Needs root.
#include "tests/tracking/tracking_fixture.hpp"

#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

using namespace allox;
using namespace allox::test;
using namespace allox::tracking;

namespace {

/// Sequences of a run's events: 1..n without gaps or repeats.
bool contiguous(const std::vector<process_event>& events) {
  std::vector<uint64_t> seqs;
  for (const auto& e : events)
    seqs.push_back(header_of(e).seq);
  std::sort(seqs.begin(), seqs.end());
  for (size_t i = 0; i < seqs.size(); ++i)
    if (seqs[i] != i + 1)
      return false;
  return true;
}

/// Every process of the run that was born was also seen to end, once.
void check_every_birth_has_one_exit(const std::vector<process_event>& events) {
  std::map<std::pair<uint64_t, uint32_t>, int> exits;
  for (const auto& e : only<exit_event>(events))
    ++exits[{e.hdr.process.start_ns, e.hdr.process.tgid}];
  for (const auto& f : only<fork_event>(events)) {
    auto key = std::make_pair(f.hdr.process.start_ns, f.hdr.process.tgid);
    CHECK_MESSAGE(exits[key] == 1, "process " << f.hdr.process.tgid);
  }
  for (const auto& [key, n] : exits)
    CHECK(n == 1);
}

/// A run's events are all of its tree: every fork's parent is the root's
/// parent (for the root) or a process of the run.
void check_one_tree(const std::vector<process_event>& events) {
  std::set<std::pair<uint64_t, uint32_t>> born;
  for (const auto& f : only<fork_event>(events))
    born.insert({f.hdr.process.start_ns, f.hdr.process.tgid});
  int roots = 0;
  for (const auto& f : only<fork_event>(events)) {
    if (f.hdr.root) {
      ++roots;
      continue;
    }
    CHECK(born.count({f.parent.start_ns, f.parent.tgid}) == 1);
  }
  CHECK(roots == 1);
  for (const auto& e : events)
    CHECK(born.count(
              {header_of(e).process.start_ns, header_of(e).process.tgid}) == 1);
}

} // namespace

TEST_CASE("tracking: 40 background forks and a shell exec, each with an "
          "exit") {
  collector c;
  scratch_cgroup group;
  constexpr uint64_t cookie = 101;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));

  auto child = group.start(shell("i=0; while [ $i -lt 40 ]; do /bin/true & "
                                 "i=$((i+1)); done; wait; exec /bin/true"));
  CHECK(sandbox::wait_child(child) == 0);
  REQUIRE(c.drain(cookie, group));

  auto events = c.of(cookie);
  auto forks = only<fork_event>(events);
  auto execs = only<exec_event>(events);
  auto exits = only<exit_event>(events);
  REQUIRE(forks.size() == 41);
  CHECK(execs.size() == 42); // sh, 40 children, the final exec
  CHECK(exits.size() == 41);

  // The root: the process clone3 put into the group, forked by us.
  auto root = std::find_if(forks.begin(), forks.end(),
                           [](const auto& f) { return f.hdr.root; });
  REQUIRE(root != forks.end());
  CHECK(root->hdr.process.tgid == static_cast<uint32_t>(child.pid));
  CHECK(root->parent.tgid == static_cast<uint32_t>(::getpid()));
  for (const auto& f : forks)
    if (!f.hdr.root)
      CHECK(f.parent == root->hdr.process);

  auto true_execs = std::count_if(execs.begin(), execs.end(), [](auto& e) {
    return e.filename == "/bin/true" && e.comm == "true";
  });
  CHECK(true_execs == 41);
  CHECK(std::count_if(execs.begin(), execs.end(), [&](auto& e) {
          return e.hdr.process == root->hdr.process && e.filename == "/bin/sh";
        }) == 1);
  for (const auto& e : exits) {
    CHECK(e.exit_code() == 0);
    CHECK(e.comm == "true");
  }
  check_every_birth_has_one_exit(events);
  check_one_tree(events);
  CHECK(contiguous(events));

  auto counters = c.probe().counters(cookie);
  REQUIRE(counters);
  CHECK(counters->produced == events.size());
  CHECK(counters->sequences == events.size());
  CHECK(counters->lost == 0);
  CHECK(counters->root_tgid == static_cast<uint32_t>(child.pid));
  CHECK(c.probe().live_processes(cookie) == 0);
  CHECK(c.last_counters().kernel_losses.total() == 0);
  CHECK(c.last_counters().decode_errors.total() == 0);
  // The string id names the process with this boot's id.
  CHECK(root->hdr.process.str(c.boot_id()) ==
        c.boot_id() + ":" + std::to_string(root->hdr.process.start_ns) + ":" +
            std::to_string(child.pid));
  CHECK(c.boot_id().size() == 36);

  auto final_counters = c.probe().untrack(group.id());
  REQUIRE(final_counters);
  CHECK(final_counters->produced == events.size());
  CHECK_FALSE(c.probe().knows(cookie));
}

TEST_CASE("tracking: a thread that execs keeps its process identity") {
  collector c;
  scratch_cgroup group;
  constexpr uint64_t cookie = 102;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));

  CHECK(group.run({tracking_helper(), "thread-exec", "/bin/true"}) == 0);
  REQUIRE(c.drain(cookie, group));

  auto events = c.of(cookie);
  auto forks = only<fork_event>(events);
  auto execs = only<exec_event>(events);
  auto exits = only<exit_event>(events);
  REQUIRE(forks.size() == 1); // the thread made no process
  REQUIRE(execs.size() == 2);
  REQUIRE(exits.size() == 1);
  auto id = forks[0].hdr.process;
  CHECK(execs[0].filename == tracking_helper());
  CHECK(execs[0].former_tid == id.tgid);
  CHECK(execs[1].filename == "/bin/true");
  CHECK(execs[1].former_tid != id.tgid); // the exec came from the thread
  CHECK(execs[1].hdr.process == id);
  CHECK(exits[0].hdr.process == id);
  CHECK(exits[0].exit_code() == 0);
  CHECK(contiguous(events));
}

TEST_CASE("tracking: double fork, setsid and an empty environment stay in "
          "the run") {
  collector c;
  scratch_cgroup group;
  constexpr uint64_t cookie = 103;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));

  CHECK(group.run({tracking_helper(), "double-fork", "/bin/sleep", "0.05"}) ==
        0);
  REQUIRE(c.drain(cookie, group));

  auto events = c.of(cookie);
  auto forks = only<fork_event>(events);
  auto execs = only<exec_event>(events);
  REQUIRE(forks.size() == 3); // helper, its child, the detached grandchild
  auto sleeps = std::count_if(execs.begin(), execs.end(), [](auto& e) {
    return e.filename == "/bin/sleep";
  });
  CHECK(sleeps == 1);
  check_every_birth_has_one_exit(events);
  check_one_tree(events);
  CHECK(contiguous(events));
}

TEST_CASE("tracking: three cgroups at once each see exactly their own "
          "processes") {
  collector c;
  scratch_cgroup groups[3];
  const int counts[3] = {3, 5, 7};
  std::vector<sandbox::child> children;
  for (int k = 0; k < 3; ++k) {
    REQUIRE_FALSE(c.probe().track(groups[k].id(), 200 + k));
  }
  for (int k = 0; k < 3; ++k)
    children.push_back(groups[k].start(
        shell("i=0; while [ $i -lt " + std::to_string(counts[k]) +
              " ]; do /bin/true; i=$((i+1)); done")));
  for (auto& ch : children)
    CHECK(sandbox::wait_child(ch) == 0);
  for (int k = 0; k < 3; ++k)
    REQUIRE(c.drain(200 + k, groups[k]));

  std::set<uint32_t> pids_seen;
  for (int k = 0; k < 3; ++k) {
    auto events = c.of(200 + k);
    auto execs = only<exec_event>(events);
    auto true_execs = std::count_if(execs.begin(), execs.end(), [](auto& e) {
      return e.filename == "/bin/true";
    });
    CHECK(true_execs == counts[k]);
    auto forks = only<fork_event>(events);
    CHECK(forks.size() == size_t(counts[k]) + 1);
    auto root = std::find_if(forks.begin(), forks.end(),
                             [](const auto& f) { return f.hdr.root; });
    REQUIRE(root != forks.end());
    CHECK(root->hdr.process.tgid == static_cast<uint32_t>(children[k].pid));
    check_one_tree(events);
    check_every_birth_has_one_exit(events);
    CHECK(contiguous(events));
    for (const auto& f : forks)
      CHECK(pids_seen.insert(f.hdr.process.tgid).second);
  }
  CHECK(c.all().size() ==
        c.of(200).size() + c.of(201).size() + c.of(202).size());
}

TEST_CASE("tracking: processes outside tracked cgroups are never reported") {
  collector c;
  scratch_cgroup tracked;
  scratch_cgroup untracked;
  constexpr uint64_t cookie = 104;
  REQUIRE_FALSE(c.probe().track(tracked.id(), cookie));

  // Busy neighbours: an untracked cgroup and our own (untracked) process.
  auto neighbour = untracked.start(
      shell("i=0; while [ $i -lt 10 ]; do /bin/true; i=$((i+1)); done"));
  CHECK(std::system("/bin/true") == 0);
  CHECK(tracked.run({"/bin/sh", "-c", "exec /bin/true"}) == 0);
  CHECK(sandbox::wait_child(neighbour) == 0);
  REQUIRE(untracked.wait_empty());
  REQUIRE(c.drain(cookie, tracked));

  // fork (root), exec sh, exec true, exit: nothing else at all.
  auto events = c.of(cookie);
  CHECK(events.size() == 4);
  CHECK(c.all().size() == 4);
  for (const auto& e : c.all())
    CHECK(header_of(e).process.tgid != static_cast<uint32_t>(neighbour.pid));

  // Once untracked, the group's new processes are not reported either. A
  // tracked sentinel started afterwards proves the ring had its chance:
  // its records come after any the untracked run could have produced.
  REQUIRE(c.probe().untrack(tracked.id()));
  CHECK(tracked.run({"/bin/sh", "-c", "exec /bin/true"}) == 0);
  scratch_cgroup sentinel;
  REQUIRE_FALSE(c.probe().track(sentinel.id(), cookie + 1));
  CHECK(sentinel.run({"/bin/true"}) == 0);
  REQUIRE(c.drain(cookie + 1, sentinel));
  CHECK(c.of(cookie + 1).size() == 3);
  CHECK(c.all().size() == 7);
  CHECK(c.last_counters().decode_errors.total() == 0);
}

TEST_CASE("tracking: a process moved in through cgroup.procs before exec is "
          "the root") {
  collector c;
  scratch_cgroup group;
  constexpr uint64_t cookie = 105;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));

  // Forked outside the group (not reported), joins it, then execs. The
  // child of a threaded process only makes async-signal-safe calls.
  auto procs = group.path() + "/cgroup.procs";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1)
      ::_exit(120);
    ::close(fd);
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    ::execv(argv[0], argv);
    ::_exit(121);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  REQUIRE(c.drain(cookie, group));

  auto events = c.of(cookie);
  REQUIRE(events.size() == 2);
  auto& exec = std::get<exec_event>(events[0]);
  CHECK(exec.hdr.root);
  CHECK(exec.hdr.process.tgid == static_cast<uint32_t>(pid));
  CHECK(exec.filename == "/bin/true");
  CHECK(std::get<exit_event>(events[1]).hdr.process == exec.hdr.process);
}

TEST_CASE("tracking: a tiny ring buffer under a storm loses records, and "
          "the loss shows") {
  bpf::probe_options opts;
  opts.ring_bytes = 4096;
  // No reader while the storm runs: the ring fills at once.
  collector c{opts, {}, false};
  scratch_cgroup group;
  constexpr uint64_t cookie = 106;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));

  CHECK(group.run({tracking_helper(), "spawn", "64", "/bin/true"}) == 0);
  REQUIRE(group.wait_empty());
  c.start_reader();
  REQUIRE(c.drain(cookie, group));

  auto counters = c.probe().counters(cookie);
  REQUIRE(counters);
  CHECK(counters->lost > 0);
  CHECK(counters->sequences == counters->produced + counters->lost);
  auto losses = c.probe().losses();
  REQUIRE(losses);
  CHECK(losses->total() == counters->lost);
  CHECK(losses->by_cause[ALLOX_LOSS_RINGBUF_FORK] +
            losses->by_cause[ALLOX_LOSS_RINGBUF_EXEC] +
            losses->by_cause[ALLOX_LOSS_RINGBUF_EXIT] ==
        counters->lost);

  // User space sees it twice: the batch counters, and the sequences it
  // never received out of those the kernel handed out.
  auto events = c.of(cookie);
  CHECK(events.size() == counters->produced);
  CHECK(c.last_counters().kernel_losses.total() == counters->lost);
  std::set<uint64_t> seqs;
  for (const auto& e : events)
    seqs.insert(header_of(e).seq);
  CHECK(seqs.size() == events.size());
  CHECK(*seqs.rbegin() <= counters->sequences);
  CHECK(counters->sequences - seqs.size() == counters->lost);
}

TEST_CASE("tracking: with lazy wakeups every record still arrives") {
  bpf::probe_options opts;
  opts.wakeup_bytes = 64 * 1024;
  collector c{opts};
  scratch_cgroup group;
  constexpr uint64_t cookie = 108;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));
  // Far fewer bytes than the threshold: no wakeup at all.
  CHECK(group.run(shell("/bin/true; /bin/true")) == 0);
  REQUIRE(c.drain(cookie, group));
  auto events = c.of(cookie);
  CHECK(events.size() == 9); // sh: fork exec exit; 2 x true: fork exec exit
  CHECK(contiguous(events));

  opts.wakeup_bytes = opts.ring_bytes;
  CHECK(code_of(bpf::process_probe::open(opts).error()) ==
        errc::invalid_argument);
}

TEST_CASE("tracking: a burst waits for its batch, and hurry() hands it over "
          "at once") {
  tracking::reader_options ropts;
  ropts.min_batch_interval_ms = 3000;
  collector c{{}, ropts};
  scratch_cgroup group;
  constexpr uint64_t cookie = 112;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));
  CHECK(group.run(shell("/bin/true; /bin/true")) == 0);
  // Nine records within a few ms: at most the first goes before its batch
  // is due, three seconds after the last one.
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  CHECK(c.of(cookie).size() < 9);
  auto t0 = std::chrono::steady_clock::now();
  c.hurry();
  REQUIRE(eventually([&] { return c.of(cookie).size() == 9; },
                     std::chrono::milliseconds{1000}));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds{500});
  CHECK(contiguous(c.of(cookie)));
  REQUIRE(c.drain(cookie, group));
}

TEST_CASE("tracking: a long batch interval does not make a small ring lose "
          "records") {
  bpf::probe_options opts;
  opts.ring_bytes = 16 * 1024; // about 90 records
  tracking::reader_options ropts;
  ropts.min_batch_interval_ms = 3000;
  collector c{opts, ropts};
  scratch_cgroup group;
  constexpr uint64_t cookie = 113;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));
  // About 600 records within a fraction of the interval.
  CHECK(group.run(shell("i=0; while [ $i -lt 200 ]; do /bin/true; "
                        "i=$((i+1)); done")) == 0);
  c.hurry();
  REQUIRE(c.drain(cookie, group));
  auto events = c.of(cookie);
  CHECK(events.size() == 603);
  CHECK(contiguous(events));
  auto losses = c.probe().losses();
  REQUIRE(losses);
  CHECK(losses->total() == 0);
}

TEST_CASE("tracking: a full tasks map is a counted loss") {
  bpf::probe_options opts;
  opts.max_tasks = 4;
  collector c{opts};
  scratch_cgroup group;
  constexpr uint64_t cookie = 107;
  REQUIRE_FALSE(c.probe().track(group.id(), cookie));

  CHECK(group.run({tracking_helper(), "spawn", "12", "/bin/sleep", "0.1"}) ==
        0);
  REQUIRE(c.drain(cookie, group));
  auto losses = c.probe().losses();
  REQUIRE(losses);
  CHECK(losses->by_cause[ALLOX_LOSS_TASKS_FULL] > 0);
  CHECK(c.probe().counters(cookie)->lost ==
        losses->by_cause[ALLOX_LOSS_TASKS_FULL]);
  CHECK(c.last_counters().kernel_losses.by_cause[ALLOX_LOSS_TASKS_FULL] > 0);
}

TEST_CASE("tracking: a failing reader reports once and stops") {
  if (!fault_injection_enabled())
    return;
  auto probe = bpf::process_probe::open();
  REQUIRE(probe);
  reader_options opts;
  opts.faults.arm({"tracking.reader.poll", "throw", 0});
  std::atomic<int> failures{0};
  std::string message;
  auto reader = ring_reader::start(
      **probe, [](event_batch) {},
      [&](const caf::error& err) {
        message = message_of(err);
        ++failures;
      },
      std::move(opts));
  REQUIRE(reader);
  REQUIRE(eventually([&] { return !(*reader)->running(); }));
  (*reader)->stop();
  CHECK(failures == 1);
  CHECK(message.find("tracking.reader.poll") != std::string::npos);
}

TEST_CASE("tracking: a batch handler that throws stops the reader with a "
          "failure") {
  auto probe = bpf::process_probe::open();
  REQUIRE(probe);
  std::atomic<int> failures{0};
  auto reader = ring_reader::start(
      **probe, [](event_batch) { throw std::runtime_error("handler broke"); },
      [&](const caf::error&) { ++failures; });
  REQUIRE(reader);
  REQUIRE(eventually([&] { return !(*reader)->running(); }));
  CHECK(failures == 1);
}
