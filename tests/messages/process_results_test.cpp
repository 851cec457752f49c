// SPDX-License-Identifier: Apache-2.0
// A tracked run's process results and their native JSON: the process map
// (byte for byte as rows stored by every version spell it), the event
// log's lines read back, and the pages and trees built from them.
#include "messages/results/processes_json.hpp"
#include "messages/results/runs_json.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace allox;

namespace {

/// A map of two processes as the session's process map has always stored
/// it: the root (not the run's child, so no parent id) and a child killed
/// by a signal.
const char* const stored_map =
    R"({"b:10:7":{"process_id":"b:10:7","pid":7,"ppid":1,)"
    R"("parent_process_id":null,"comm":"sh","filenames":["/bin/sh"],)"
    R"("exit_code":null,"signal":null,"alive":true,"root":true,)"
    R"("started_ns":10,"exited_ns":null},)"
    R"("b:20:8":{"process_id":"b:20:8","pid":8,"ppid":7,)"
    R"("parent_process_id":"b:10:7","comm":"sleep","filenames":[],)"
    R"("exit_code":null,"signal":9,"alive":false,"root":false,)"
    R"("started_ns":20,"exited_ns":30}})";

process_record fork_record() {
  process_record e;
  e.kind = process_event_kind::fork;
  e.kernel_seq = 4;
  e.time_ns = 20;
  e.pid = 8;
  e.ppid = 7;
  e.tid = 8;
  e.process_id = "b:20:8";
  e.parent_process_id = "b:10:7";
  e.comm = "s\"h";
  return e;
}

} // namespace

TEST_CASE("process results: a stored map reads back typed and writes the "
          "same text") {
  auto m = process_map_from_json(json::parse(stored_map).as_object());
  REQUIRE(m);
  REQUIRE(m->size() == 2);
  const auto* child = m->find("b:20:8");
  REQUIRE(child != nullptr);
  CHECK(child->parent_process_id == caf::optional<std::string>{"b:10:7"});
  CHECK(child->signal == caf::optional<int64_t>{9});
  CHECK_FALSE(child->exit_code);
  CHECK(child->alive == caf::optional<bool>{false});
  CHECK(m->find("b:10:7")->root);
  // The map keeps the order the processes were first seen in.
  CHECK(m->entries().front().process_id == "b:10:7");
  CHECK(json::serialize(to_json(*m)) == stored_map);
}

TEST_CASE("process results: an older store's entry takes its id from its key "
          "and keeps the keys this version does not read") {
  auto old = R"({"b:r:7:5":{"pid":7,"alive":true,"event":"exec",)"
             R"("former_tid":9}})";
  auto m = process_map_from_json(json::parse(old).as_object());
  REQUIRE(m);
  const auto* p = m->find("b:r:7:5");
  REQUIRE(p != nullptr);
  CHECK(p->pid == 7);
  m->forget_liveness();
  auto back = to_json(*m).at("b:r:7:5").as_object();
  CHECK(back.at("process_id") == "b:r:7:5");
  CHECK(back.at("alive").is_null());
  CHECK(back.at("event") == "exec");
  CHECK(back.at("former_tid") == 9);
}

TEST_CASE("process results: a map of the wrong shape is refused by name, and "
          "so is the row that holds it") {
  auto bad_pid = R"({"p":{"process_id":"p","pid":"7"}})";
  auto m = process_map_from_json(json::parse(bad_pid).as_object());
  REQUIRE_FALSE(m);
  CHECK(code_of(m.error()) == errc::invalid_argument);
  CHECK(message_of(m.error()) == "process p: pid has the wrong type");
  CHECK_FALSE(process_map_from_json(json::parse(R"({"p":3})").as_object()));
  // Keyed by another process than the entry names.
  CHECK_FALSE(process_map_from_json(
      json::parse(R"({"p":{"process_id":"q"}})").as_object()));
  auto row = run_row_from_text(R"({"run_id":"r","processes":{"p":[]}})");
  REQUIRE_FALSE(row);
  CHECK(message_of(row.error()) == "run row: processes has the wrong type");
}

TEST_CASE("process results: an event line reads back as the event it was "
          "written from") {
  auto e = fork_record();
  std::string line;
  append_event_line(line, 3, e, 7, event_line_ids("r", "s", "a"));
  REQUIRE(line.back() == '\n');
  auto read = parse_event_line(line.substr(0, line.size() - 1));
  REQUIRE(read);
  CHECK(read->seq == 3);
  CHECK(read->event.kind == process_event_kind::fork);
  CHECK(read->event.comm == "s\"h");
  CHECK(read->event.parent_process_id == "b:10:7");
  CHECK(read->event.kernel_seq == 4);
  CHECK(read->ppid == 7);
  CHECK(read->run_id == "r");
  CHECK(read->agent_id == "a");
  // The wire hands the line out as it is.
  CHECK(json::serialize(to_json(*read)) + "\n" == line);
  // A line cut by a crash, and a kind no version wrote, are not events.
  CHECK_FALSE(parse_event_line(line.substr(0, line.size() / 2)));
  CHECK_FALSE(parse_event_line(R"({"seq":1,"event":"write"})"));
  CHECK_FALSE(parse_event_line(R"({"event":"exit"})"));
}

TEST_CASE("process results: an exit's line carries its code and signal, null "
          "when absent") {
  process_record e;
  e.kind = process_event_kind::exit;
  e.pid = 9;
  e.tid = 9;
  e.root = true;
  e.signal = int64_t{15};
  std::string line;
  append_event_line(line, 1, e, 1, event_line_ids("r", "s", "a"));
  CHECK(line == R"({"seq":1,"event":"exit","pid":9,"tid":9,"comm":"","ns":0,)"
                R"("process_id":"","kernel_seq":0,"run_id":"r",)"
                R"("session_id":"s","agent_id":"a","ppid":1,"root":true,)"
                R"("exit_code":null,"signal":15})"
                "\n");
  auto read = parse_event_line(line);
  REQUIRE(read);
  CHECK(read->event.root);
  CHECK_FALSE(read->event.exit_code);
  CHECK(read->event.signal == caf::optional<int64_t>{15});
}

TEST_CASE("process results: process.events and process.tree as the wire "
          "spells them") {
  event_page page;
  page.run_id = "r";
  page.next_after = 3;
  page.has_more = true;
  page.state = run_phase::running;
  logged_event e{3, fork_record(), 7, "r", "s", "a"};
  page.events.push_back(e);
  auto o = to_json(page);
  CHECK(json::serialize(o) ==
        R"({"run_id":"r","events":[{"seq":3,"event":"fork","pid":8,"tid":8,)"
        R"("comm":"s\"h","ns":20,"process_id":"b:20:8","kernel_seq":4,)"
        R"("run_id":"r","session_id":"s","agent_id":"a","ppid":7,)"
        R"("parent_process_id":"b:10:7"}],"next_after":3,"has_more":true,)"
        R"("state":"running","trace_complete":false})");

  process_tree_view t;
  t.run_id = "r";
  t.state = run_phase::completed;
  t.trace_complete = true;
  t.processes = 2;
  process_node root{"b:10:7", 7, 1, "sh", {"/bin/sh"}, 0, {}, false, {}};
  root.children.push_back({"b:20:8", 8, 7, "true", {}, {}, 9, false, {}});
  t.tree.push_back(root);
  CHECK(json::serialize(to_json(t)) ==
        R"({"run_id":"r","state":"completed","trace_complete":true,)"
        R"("processes":2,"tree":[{"process_id":"b:10:7","pid":7,"ppid":1,)"
        R"("comm":"sh","filenames":["/bin/sh"],"exit_code":0,"signal":null,)"
        R"("alive":false,"children":[{"process_id":"b:20:8","pid":8,)"
        R"("ppid":7,"comm":"true","filenames":[],"exit_code":null,)"
        R"("signal":9,"alive":false,"children":[]}]}]})");
}

TEST_CASE("process results: a process the daemon lost sight of is neither "
          "alive nor dead, and stays so when stored again") {
  auto m = process_map_from_json(json::parse(stored_map).as_object());
  REQUIRE(m);
  m->forget_liveness();
  CHECK_FALSE(m->find("b:20:8")->alive);
  auto text = json::serialize(to_json(*m));
  CHECK(text.find(R"("alive":null)") != std::string::npos);
  CHECK(text.find(R"("alive":true)") == std::string::npos);
  auto again = process_map_from_json(json::parse(text).as_object());
  REQUIRE(again);
  CHECK(json::serialize(to_json(*again)) == text);
}
