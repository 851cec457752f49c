// SPDX-License-Identifier: Apache-2.0
// The run row and its native JSON: the one encoder every front and the
// catalog use, and the decoder that reads rows of every version back.
#include "messages/results/runs_json.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace allox;

namespace {

/// A tracked, interactive run's row as the daemon writes it: every key, in
/// the order they were added during the run's life.
const char* const written_row =
    R"({"run_id":"0123456789abcdef0123456789abcdef","agent_id":"a",)"
    R"("session_id":"s","backend":"ebpf","isolation":"bubblewrap",)"
    R"("boot_id":"b","state":"completed","created_ns":1,"event_count":3,)"
    R"("processes":{"p1":{"process_id":"p1","pid":7,"ppid":1,)"
    R"("parent_process_id":null,"comm":"sh","filenames":["/bin/sh"],)"
    R"("exit_code":0,"signal":null,"alive":false,"root":true,)"
    R"("started_ns":1,"exited_ns":2}},"audit_directory":"/r/x",)"
    R"("trace_complete":true,"cookie":9,"root_pid":7,"cgroup":"/g",)"
    R"("root_exit_code":0,"stop_reason":null,"session_fenced":false,)"
    R"("lifecycle_complete":true,"finished_ns":2,"error":null,)"
    R"("provider_error":null,"network_mode":"isolated",)"
    R"("limits":{"pids.max":"64"},"argv":["sh","-c","echo hi"],)"
    R"("stdin":"pty","events_lost":0,)"
    R"("root_process_id":"p1","auto_checkpoint":{"checkpoint_id":"c"}})";

} // namespace

TEST_CASE("run row: a row read and written again is the same text") {
  auto row = run_row_from_text(written_row);
  REQUIRE(row);
  CHECK(row->state == run_phase::completed);
  CHECK(row->root_exit_code == caf::optional<int64_t>{0});
  CHECK(row->stdin_mode == caf::optional<std::string>{"pty"});
  CHECK(row->unknown.empty());
  CHECK(json::serialize(to_json(*row)) == written_row);
  REQUIRE(row->argv);
  CHECK(*row->argv == std::vector<std::string>{"sh", "-c", "echo hi"});
}

TEST_CASE("run row: a row of an earlier version, without argv, reads and is "
          "written back without it") {
  std::string earlier = written_row;
  const std::string argv = R"("argv":["sh","-c","echo hi"],)";
  auto at = earlier.find(argv);
  REQUIRE(at != std::string::npos);
  earlier.erase(at, argv.size());
  auto row = run_row_from_text(earlier);
  REQUIRE(row);
  CHECK_FALSE(row->argv);
  CHECK(row->unknown.empty());
  CHECK(json::serialize(to_json(*row)) == earlier);
}

TEST_CASE("run row: an argv that is not an array of strings is kept as it "
          "is") {
  auto o = json::parse(written_row).as_object();
  o["argv"] = json::array{"sh", 1};
  auto row = run_row_from_json(o);
  REQUIRE(row);
  CHECK_FALSE(row->argv);
  CHECK(row->unknown.at("argv") == json::value(json::array{"sh", 1}));
}

TEST_CASE("run row: a new row has the keys of a starting run and no more") {
  run_row row;
  row.run_id = "r";
  auto o = to_json(row);
  CHECK(o.at("state") == "starting");
  CHECK(o.at("root_pid").is_null());
  CHECK(o.at("stop_reason").is_null());
  CHECK(o.size() == 22);
  CHECK_FALSE(o.contains("stdin"));
  CHECK_FALSE(o.contains("network_mode"));
  CHECK_FALSE(o.contains("argv"));
}

TEST_CASE("run row: keys of a newer version are kept, in order, at the end") {
  auto o = json::parse(written_row).as_object();
  o["future_key"] = json::array{1, 2};
  o["another"] = "x";
  auto row = run_row_from_json(o);
  REQUIRE(row);
  CHECK(row->unknown.size() == 2);
  CHECK(json::serialize(to_json(*row)) == json::serialize(o));
}

TEST_CASE("run row: a known key of the wrong type is refused by name") {
  auto o = json::parse(written_row).as_object();
  o["root_pid"] = "seven";
  auto row = run_row_from_json(o);
  REQUIRE_FALSE(row);
  CHECK(code_of(row.error()) == errc::invalid_argument);
  CHECK(message_of(row.error()).find("root_pid") != std::string::npos);
  o = json::parse(written_row).as_object();
  o["state"] = "sleeping";
  CHECK_FALSE(run_row_from_json(o));
  o.erase("run_id");
  CHECK_FALSE(run_row_from_json(json::object{{"state", "running"}}));
  CHECK_FALSE(run_row_from_text("[1]"));
}

TEST_CASE("run row: every phase has its wire name, and the final ones are "
          "final") {
  for (auto p :
       {run_phase::starting, run_phase::running, run_phase::completed,
        run_phase::stopped, run_phase::failed, run_phase::interrupted}) {
    auto back = parse_run_phase(to_string(p));
    REQUIRE(back);
    CHECK(*back == p);
  }
  CHECK_FALSE(is_final(run_phase::starting));
  CHECK_FALSE(is_final(run_phase::running));
  CHECK(is_final(run_phase::completed));
  CHECK(is_final(run_phase::interrupted));
  CHECK_FALSE(parse_run_phase("Running"));
}

TEST_CASE("run row: process.input, resize and a stream's subscription "
          "render as the wire spells them") {
  CHECK(json::serialize(to_json(input_result{"r1", 4096, false})) ==
        R"({"run_id":"r1","written":4096,"eof":false})");
  CHECK(json::serialize(to_json(resize_result{"r1", 40, 120})) ==
        R"({"run_id":"r1","rows":40,"cols":120})");
  run_row row;
  row.run_id = "r1";
  auto sub = to_json(run_subscription{row, "/audit/r1"});
  CHECK(sub.at("row") == to_json(row));
  CHECK(sub.at("dir") == "/audit/r1");
  CHECK(sub.size() == 2);
}
