// SPDX-License-Identifier: Apache-2.0
// A tracked run's process map and tree from synthetic event batches, as
// the session's tracking facet builds them (actors/session/process_map.hpp).
#include "actors/session/process_map.hpp"
#include "messages/results/processes_json.hpp"
#include "messages/results/runs_json.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace allox;
using namespace allox::session_facets;

namespace {

std::string pid_id(uint32_t pid, uint64_t start) {
  return "boot:" + std::to_string(start) + ":" + std::to_string(pid);
}

process_record fork_of(uint32_t pid, uint64_t start, uint32_t ppid,
                       uint64_t pstart, const std::string& comm,
                       bool root = false) {
  process_record r;
  r.cookie = 7;
  r.kind = process_event_kind::fork;
  r.time_ns = start;
  r.pid = pid;
  r.tid = pid;
  r.ppid = ppid;
  r.process_id = pid_id(pid, start);
  r.parent_process_id = pid_id(ppid, pstart);
  r.root = root;
  r.comm = comm;
  return r;
}

process_record exec_of(uint32_t pid, uint64_t start, uint32_t tid,
                       const std::string& filename, uint64_t at) {
  process_record r;
  r.cookie = 7;
  r.kind = process_event_kind::exec;
  r.time_ns = at;
  r.pid = pid;
  r.tid = tid;
  r.process_id = pid_id(pid, start);
  r.filename = filename;
  r.comm = filename.substr(filename.rfind('/') + 1);
  return r;
}

process_record exit_of(uint32_t pid, uint64_t start, uint64_t at,
                       caf::optional<int64_t> code,
                       caf::optional<int64_t> sig = caf::none) {
  process_record r;
  r.cookie = 7;
  r.kind = process_event_kind::exit;
  r.time_ns = at;
  r.pid = pid;
  r.tid = pid;
  r.process_id = pid_id(pid, start);
  r.exit_code = code;
  r.signal = sig;
  return r;
}

/// A row with an empty map, fed `events` in order, as the wire shows it.
json::object run(const std::vector<process_record>& events) {
  run_row row;
  for (const auto& e : events)
    apply_event(row.processes, row, e);
  return to_json(row);
}

/// The wire's map read back, as the catalog reads a stored row's.
process_map map_of(const json::object& row) {
  auto m = process_map_from_json(row.at("processes").as_object());
  REQUIRE(m);
  return std::move(*m);
}

/// Every process of the row's map exited.
bool exited(const json::object& row) {
  return all_exited(map_of(row));
}

/// The row's tree as process.tree's `tree` spells it.
json::array tree_of(const json::object& row) {
  json::array out;
  for (const auto& node : nest(map_of(row)))
    out.emplace_back(to_json(node));
  return out;
}

const json::object& proc(const json::object& row, uint32_t pid,
                         uint64_t start) {
  return row.at("processes").as_object().at(pid_id(pid, start)).as_object();
}

} // namespace

TEST_CASE("process map: fork, exec and exit build the tree from the root") {
  // bwrap (root, forked by the daemon's pid 50) -> init -> sh -> 2 x true
  auto row = run(
      {fork_of(100, 1000, 50, 10, "daemon", true),
       exec_of(100, 1000, 100, "/usr/bin/bwrap", 1001),
       fork_of(101, 1100, 100, 1000, "bwrap"),
       exec_of(101, 1100, 101, "/run/allox/init", 1101),
       fork_of(102, 1200, 101, 1100, "init"),
       exec_of(102, 1200, 102, "/bin/sh", 1201),
       fork_of(103, 1300, 102, 1200, "sh"), fork_of(104, 1400, 102, 1200, "sh"),
       exec_of(103, 1300, 103, "/bin/true", 1301),
       exec_of(104, 1400, 104, "/bin/true", 1401), exit_of(104, 1400, 1500, 0),
       exit_of(103, 1300, 1501, 0), exit_of(102, 1200, 1502, 3),
       exit_of(101, 1100, 1503, 3), exit_of(100, 1000, 1504, 3)});
  CHECK(row.at("root_process_id") == json::value(pid_id(100, 1000)));
  CHECK(row.at("processes").as_object().size() == 5);
  CHECK(exited(row));
  // The root's parent is not the run's: no parent id.
  CHECK(proc(row, 100, 1000).at("parent_process_id").is_null());
  CHECK(proc(row, 103, 1300).at("parent_process_id") ==
        json::value(pid_id(102, 1200)));
  CHECK(proc(row, 102, 1200).at("exit_code") == json::value(3));
  CHECK(proc(row, 102, 1200).at("filenames") == json::array{"/bin/sh"});

  auto tree = tree_of(row);
  REQUIRE(tree.size() == 1);
  const auto* node = &tree[0].as_object();
  CHECK(node->at("pid") == json::value(100u));
  for (int depth = 0; depth < 2; ++depth) {
    REQUIRE(node->at("children").as_array().size() == 1);
    node = &node->at("children").as_array()[0].as_object();
  }
  CHECK(node->at("comm") == "sh");
  const auto& kids = node->at("children").as_array();
  REQUIRE(kids.size() == 2);
  // In the order they started, whatever order they exited in.
  CHECK(kids[0].at("pid") == json::value(103u));
  CHECK(kids[1].at("pid") == json::value(104u));
  CHECK(kids[0].at("alive") == json::value(false));
  CHECK(kids[0].at("filenames") == json::array{"/bin/true"});
}

TEST_CASE("process map: a thread's exec keeps the process, and a signal ends "
          "it") {
  auto row = run({fork_of(200, 2000, 50, 10, "daemon", true),
                  exec_of(200, 2000, 200, "/workspace/helper", 2001),
                  // A second thread (tid 201) execs: same process.
                  exec_of(200, 2000, 201, "/bin/sleep", 2002),
                  exit_of(200, 2000, 2003, caf::none, int64_t{9})});
  CHECK(row.at("processes").as_object().size() == 1);
  const auto& p = proc(row, 200, 2000);
  CHECK(p.at("filenames") == json::array{"/workspace/helper", "/bin/sleep"});
  CHECK(p.at("comm") == "sleep");
  CHECK(p.at("exit_code").is_null());
  CHECK(p.at("signal") == json::value(9));
  CHECK(exited(row));
}

TEST_CASE("process map: a pid reused is another process, and a live one keeps "
          "the run's trace open") {
  auto row =
      run({fork_of(300, 3000, 50, 10, "daemon", true),
           fork_of(301, 3100, 300, 3000, "sh"), exit_of(301, 3100, 3200, 0),
           // The same pid again, started later: a new identity.
           fork_of(301, 3300, 300, 3000, "sh")});
  CHECK(row.at("processes").as_object().size() == 3);
  CHECK(proc(row, 301, 3100).at("alive") == json::value(false));
  CHECK(proc(row, 301, 3300).at("alive") == json::value(true));
  CHECK_FALSE(exited(row));
  auto tree = tree_of(row);
  REQUIRE(tree.size() == 1);
  CHECK(tree[0].at("children").as_array().size() == 2);
  // An empty map is not a complete trace.
  CHECK_FALSE(all_exited(process_map{}));
  // Nor is a map whose processes the daemon lost sight of (a restart).
  auto lost = map_of(run({fork_of(310, 3000, 50, 10, "daemon", true),
                          exit_of(310, 3000, 3100, 0)}));
  CHECK(all_exited(lost));
  lost.forget_liveness();
  CHECK_FALSE(all_exited(lost));
}

TEST_CASE("process map: a process whose fork was not seen is added by its "
          "exec, at the top of the tree") {
  auto row = run({exec_of(400, 4000, 400, "/bin/true", 4001),
                  exit_of(400, 4000, 4002, 0)});
  const auto& p = proc(row, 400, 4000);
  CHECK(p.at("filenames") == json::array{"/bin/true"});
  CHECK(p.at("parent_process_id").is_null());
  auto tree = tree_of(row);
  CHECK(tree.size() == 1);
  CHECK(exited(row));
}

TEST_CASE("process map: an events.jsonl line is the JSON object of the event, "
          "strings escaped") {
  auto ids = event_line_ids("r\"1", "s", "a");
  auto fork = fork_of(11, 200, 10, 100, "we\"ird\n\x01name", true);
  auto exec = exec_of(11, 200, 12, "/usr/bin/caf\xc3\xa9 \\ tab\t", 300);
  auto killed = exit_of(11, 200, 400, caf::none, 9);
  std::string text;
  append_event_line(text, 1, fork, 10, ids);
  append_event_line(text, 2, exec, 10, ids);
  append_event_line(text, 3, killed, 10, ids);
  // Each line is what Boost.JSON makes of the same object, field order
  // included.
  // The kind is rendered by its wire name, spelled here.
  auto expected = [&](uint64_t seq, const process_record& e,
                      std::string_view event) {
    json::object o{{"seq", seq},
                   {"event", json::string_view{event.data(), event.size()}},
                   {"pid", e.pid},
                   {"tid", e.tid},
                   {"comm", e.comm},
                   {"ns", e.time_ns},
                   {"process_id", e.process_id},
                   {"kernel_seq", e.kernel_seq},
                   {"run_id", "r\"1"},
                   {"session_id", "s"},
                   {"agent_id", "a"},
                   {"ppid", 10}};
    if (e.root)
      o["root"] = true;
    if (event == "fork")
      o["parent_process_id"] = e.parent_process_id;
    if (event == "exec")
      o["filename"] = e.filename;
    if (event == "exit") {
      auto or_null = [](const caf::optional<int64_t>& v) {
        return v ? json::value(*v) : json::value(nullptr);
      };
      o["exit_code"] = or_null(e.exit_code);
      o["signal"] = or_null(e.signal);
    }
    return json::serialize(o) + "\n";
  };
  CHECK(text == expected(1, fork, "fork") + expected(2, exec, "exec") +
                    expected(3, killed, "exit"));
  auto first = json::parse(text.substr(0, text.find('\n'))).as_object();
  CHECK(first.at("comm") == "we\"ird\n\x01name");
}
