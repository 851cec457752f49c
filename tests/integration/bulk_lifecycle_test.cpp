// SPDX-License-Identifier: Apache-2.0
// PUT and GET /v1/files/... against the session's life: a client gone or
// cut off mid-upload, a run writing beside a transfer, a rollback
// overtaking an upload and a daemon killed during one leave the old file
// or the new one, and nothing else.
#include "tests/fixtures/bulk_files.hpp"
#include "tests/fixtures/raw_socket.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/session_files.hpp"
#include "tests/fixtures/temp_dir.hpp"
#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace allox;
using namespace allox::test;

TEST_CASE("bulk: a client gone mid-transfer leaves nothing behind") {
  daemon_process d{with_args({"--max-session-upload-bytes", "12582912"})};
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto cur = d.current("a", "s");
  REQUIRE(put(d, "keep", "old content").status == 200);
  // 10 MiB announced, 2 MiB sent, then the connection closes.
  cut_off_upload(d, "keep", 10 << 20, 2 << 20);
  {
    // A download read a little, then abandoned.
    REQUIRE(put(d, "big", std::string(8 << 20, 'b')).status == 200);
    raw_socket sock{d.port()};
    REQUIRE(sock.send_all("GET /v1/files/a/s/big HTTP/1.1\r\nHost: x\r\n\r\n"));
    CHECK(sock.read_for(std::chrono::seconds{5}, "bbbb").find("200 OK") !=
          std::string::npos);
  }
  CHECK(cleaned_up(cur));
  CHECK(read_file(cur + "/keep") == "old content");
  // The abandoned upload no longer counts against the session's limit.
  CHECK(put(d, "again", std::string(10 << 20, 'a')).status == 200);
  auto audit = expect_ok(d.client().rpc("audit.list", {{"agent_id", "a"}}));
  // Only complete uploads are audited.
  for (const auto& e : audit.at("events").as_array()) {
    bool keep = e.at("op") == "file.upload" && e.at("path") == "keep";
    CHECK((!keep || e.at("bytes") == 11));
  }
}

TEST_CASE("bulk: an upload cut off after its write-back started leaves "
          "nothing behind") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto cur = d.current("a", "s");
  REQUIRE(put(d, "keep", "old content").status == 200);
  // 64 MiB announced, 40 MiB sent: past two write-back steps of 16 MiB,
  // so the helper thread is kicking when the connection closes.
  cut_off_upload(d, "keep", 64 << 20, 40 << 20);
  CHECK(cleaned_up(cur));
  CHECK(read_file(cur + "/keep") == "old content");
  // The worker and its helper ended; the daemon takes the next upload.
  CHECK(put(d, "keep", std::string(20 << 20, 'n')).status == 200);
  CHECK(read_file(cur + "/keep") == std::string(20 << 20, 'n'));
}

TEST_CASE("bulk: transfers are allowed while a run lives and see its files") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto row = sh(c, "a", "s",
                "echo from-run > /workspace/made; "
                "while [ ! -e /workspace/up ]; do sleep 0.05; done; "
                "cat /workspace/up");
  // The run waits for the uploaded file; the upload does not wait for it.
  REQUIRE(put(d, "up", "from-upload\n").status == 200);
  auto done = wait_done(c, "a", "s", run_id(row));
  CHECK(done.at("root_exit_code") == 0);
  CHECK(output(c, "a", "s", run_id(row)) == "from-upload\n");
  CHECK(get(d, "made").body == "from-run\n");
}

TEST_CASE("bulk: an upload a rollback overtook is answered with conflict") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(c.rpc("checkpoint.create",
                  with(ids("a", "s"), {{"checkpoint_id", "c0"}})));
  raw_socket sock{d.port()};
  REQUIRE(sock.send_all("PUT /v1/files/a/s/f HTTP/1.1\r\nHost: x\r\n"
                        "Content-Length: 10\r\n\r\nhello"));
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  // The upload is no mutation: the rollback does not wait for it.
  expect_ok(c.rpc("session.rollback",
                  with(ids("a", "s"), {{"checkpoint_id", "c0"}})));
  REQUIRE(sock.send_all("world"));
  auto got = sock.read_for(std::chrono::seconds{10}, "}");
  INFO(got);
  CHECK(got.find("HTTP/1.1 400") == 0);
  CHECK(got.find("rolled back during the upload") != std::string::npos);
  CHECK(!exists(d.current("a", "s") + "/f"));
}

TEST_CASE("bulk: a daemon killed mid-upload leaves nothing behind after "
          "its restart") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto cur = d.current("a", "s");
  expect_ok(c.rpc("file.mkdir", with(ids("a", "s"), {{"path", "dir"}})));
  REQUIRE(put(d, "dir/keep", "old content").status == 200);
  REQUIRE(put_tar(d, "tree", make_tar({file("old", "x")})).status == 200);
  auto tar = make_tar({file("new-1", std::string(1 << 20, 'n')),
                       file("new-2", std::string(1 << 20, 'n'))});
  // A file upload and a tar upload, each with half of its body sent.
  raw_socket one{d.port()};
  REQUIRE(one.send_all("PUT /v1/files/a/s/dir/keep HTTP/1.1\r\nHost: x\r\n"
                       "Content-Length: 4194304\r\n\r\n" +
                       std::string(2 << 20, 'p')));
  raw_socket two{d.port()};
  REQUIRE(two.send_all("PUT /v1/files/a/s/tree HTTP/1.1\r\nHost: x\r\n"
                       "Content-Type: application/x-tar\r\nContent-Length: " +
                       std::to_string(tar.size()) + "\r\n\r\n" +
                       tar.substr(0, tar.size() / 2)));
  // Both temporary entries exist before the crash.
  bool started = false;
  for (int i = 0; i < 100 && !started; ++i) {
    started = !leftovers(cur + "/dir").empty() && !leftovers(cur).empty();
    if (!started)
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  REQUIRE(started);
  d.crash();
  d.start();
  CHECK(leftovers(cur + "/dir").empty());
  CHECK(leftovers(cur).empty());
  CHECK(read_file(cur + "/dir/keep") == "old content");
  CHECK(read_file(cur + "/tree/old") == "x");
  auto ops = audit_ops(c, {{"agent_id", "a"}, {"op", "file.upload.recovered"}});
  CHECK(ops.size() == 1);
  // Nothing is cleaned twice: the marks went with the leftovers.
  d.stop();
  d.start();
  ops = audit_ops(c, {{"agent_id", "a"}, {"op", "file.upload.recovered"}});
  CHECK(ops.size() == 1);
}
