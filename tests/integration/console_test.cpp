// The operator console (GET /ui) in a real headless Chromium against a
// running daemon: the page loads, shows what the test created, and leaves
// a screenshot in the build tree (console.png) as an artefact.
#include "tests/fixtures/bulk_client.hpp"
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace allox;
using namespace allox::test;

namespace {

/// Runs a shell command; its stdout (stderr is dropped).
std::string capture(const std::string& cmd) {
  return shell_output(cmd + " 2>/dev/null");
}

/// Chromium, headless, with time to poll the daemon a few times.
std::string chromium(const std::string& args, const std::string& url) {
  return capture("timeout 60 chromium --headless=new --no-sandbox "
                 "--disable-gpu --hide-scrollbars --window-size=1280,800 "
                 "--virtual-time-budget=6000 " +
                 args + " '" + url + "'");
}

} // namespace

TEST_CASE("console: the page shows the daemon's actors, sessions, runs and "
          "audit in Chromium") {
  auto opts = with_execution();
  opts.token = "tok";
  daemon_process d{opts};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("console-agent", "console-s")));
  auto first = expect_ok(
      c.rpc("checkpoint.create",
            with(ids("console-agent", "console-s"), {{"message", "first"}})));
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("console-agent", "console-s"),
                       {{"message", "second"}, {"pinned", true}})));
  // A branch: roll back to the first and checkpoint again.
  expect_ok(c.rpc("session.rollback",
                  with(ids("console-agent", "console-s"),
                       {{"checkpoint_id", first.at("checkpoint_id")}})));
  expect_ok(c.rpc("checkpoint.create", with(ids("console-agent", "console-s"),
                                            {{"message", "branch"}})));
  auto run = run_id(sh(c, "console-agent", "console-s",
                       "echo console-output-line; sleep 30"));
  // The page itself is open; its data needs the token (the fragment).
  http_client anonymous{"127.0.0.1", d.port()};
  auto page = anonymous.request("GET", "/ui");
  REQUIRE(page.status == 200);
  CHECK(page.headers["Content-Type"].find("text/html") == 0);
  CHECK(anonymous.rpc("system.dump").status == 401);
  auto url = "http://127.0.0.1:" + std::to_string(d.port()) + "/ui#token=tok";
  auto dom = chromium("--dump-dom", url);
  INFO(dom.substr(0, 2000));
  CHECK(dom.find("data-ready=\"true\"") != std::string::npos);
  CHECK(dom.find("<option value=\"console-agent/console-s\"") !=
        std::string::npos);
  CHECK(dom.find("data-kind=\"session\"") != std::string::npos);
  // Three checkpoints in the graph, the head among them.
  size_t circles = 0;
  for (size_t at = dom.find("data-checkpoint="); at != std::string::npos;
       at = dom.find("data-checkpoint=", at + 1))
    ++circles;
  CHECK(circles == 3);
  CHECK(dom.find("(head)") != std::string::npos);
  CHECK(dom.find("data-run=\"" + run + "\"") != std::string::npos);
  CHECK(dom.find("console-output-line") != std::string::npos);
  CHECK(dom.find("session.rollback") != std::string::npos);
  // The screenshot, kept in the build tree for people to look at.
  auto shot = std::string{ALLOX_TEST_ARTEFACTS} + "/console.png";
  std::remove(shot.c_str());
  chromium("--screenshot=" + shot, url);
  auto png = read_file(shot);
  REQUIRE(png.size() > 10000);
  CHECK(png.compare(1, 3, "PNG") == 0);
  expect_ok(c.rpc("process.stop",
                  with(ids("console-agent", "console-s"), {{"run_id", run}})));
}
