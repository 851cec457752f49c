// SPDX-License-Identifier: Apache-2.0
// PUT and GET /v1/files/...: large files and trees round-trip byte for
// byte, tar entries that would leave the target are refused with no side
// effect, limits answer 413 and leave nothing behind, and a checkpoint or
// a connection's next request is not disturbed.
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

TEST_CASE("bulk: a 1 GiB file round-trips byte-identical") {
  daemon_options o;
  o.loop_size = "3G";
  daemon_process d{o};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  constexpr uint64_t size = uint64_t{1} << 30;
  fnv_hash sent;
  uint64_t offset = 0;
  bulk_request up;
  up.target = std::string{files_of_a_s} + "big.bin";
  up.length = size;
  up.expect_continue = true;
  up.body = [&](char* buf, size_t cap) {
    auto n = static_cast<size_t>(std::min<uint64_t>(cap, size - offset));
    pattern_bytes(offset, buf, n);
    sent.add(buf, n);
    offset += n;
    return n;
  };
  auto r = bulk_call(d.port(), up);
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(r.json.at("result").at("size") == static_cast<int64_t>(size));
  CHECK(r.json.at("result").at("path") == "big.bin");
  struct stat sb {};
  REQUIRE(::stat((d.current("a", "s") + "/big.bin").c_str(), &sb) == 0);
  CHECK(static_cast<uint64_t>(sb.st_size) == size);
  CHECK(leftovers(d.current("a", "s")).empty());

  fnv_hash got;
  bulk_request down;
  down.method = "GET";
  down.target = up.target;
  down.sink = [&](const char* p, size_t n) {
    got.add(p, n);
  };
  auto g = bulk_call(d.port(), down);
  CHECK(g.status == 200);
  CHECK(g.complete);
  CHECK(g.body_bytes == size);
  CHECK(g.headers["content-type"] == "application/octet-stream");
  CHECK(got.value == sent.value);

  // Chunked bodies (no length) work too, and replace the file in place.
  bulk_request chunked;
  chunked.target = up.target;
  chunked.body = from_string("small now");
  auto s = bulk_call(d.port(), chunked);
  CHECK(s.status == 200);
  CHECK(read_file(d.current("a", "s") + "/big.bin") == "small now");
  // Audited with byte counts.
  auto audit = expect_ok(c.rpc("audit.list", {{"agent_id", "a"}}));
  std::vector<int64_t> uploads, downloads;
  for (const auto& e : audit.at("events").as_array()) {
    auto op = e.at("op").as_string();
    const auto& f = e.as_object();
    if (op == "file.upload")
      uploads.push_back(f.at("bytes").as_int64());
    if (op == "file.download")
      downloads.push_back(f.at("bytes").as_int64());
  }
  CHECK(uploads == std::vector<int64_t>{static_cast<int64_t>(size), 9});
  CHECK(downloads == std::vector<int64_t>{static_cast<int64_t>(size)});
}

TEST_CASE("bulk: a 20,000-file tree round-trips as tar") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  temp_dir src;
  for (int i = 0; i < 200; ++i) {
    auto dir = src.path() + "/d" + std::to_string(i);
    REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
    for (int j = 0; j < 100; ++j)
      write_file(dir + "/f" + std::to_string(j),
                 "file " + std::to_string(i) + "/" + std::to_string(j) + "\n");
  }
  REQUIRE(::symlink("d1/f1", (src.path() + "/rel-link").c_str()) == 0);
  REQUIRE(::symlink("/etc", (src.path() + "/etc-link").c_str()) == 0);
  REQUIRE(::chmod((src.path() + "/d7/f7").c_str(), 0755) == 0);
  auto tar = tar_create(src.path());
  auto r = put_tar(d, "tree", tar);
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(r.json.at("result").at("type") == "directory");
  CHECK(r.json.at("result").at("entries").as_int64() >= 20000);
  auto cur = d.current("a", "s");
  CHECK(shell("diff -r --no-dereference '" + src.path() + "' '" + cur +
              "/tree'") == 0);
  struct stat sb {};
  REQUIRE(::stat((cur + "/tree/d7/f7").c_str(), &sb) == 0);
  CHECK((sb.st_mode & 0777) == 0755);

  auto g = get(d, "tree");
  CHECK(g.status == 200);
  CHECK(g.complete);
  CHECK(g.headers["content-type"] == "application/x-tar");
  temp_dir out;
  REQUIRE(tar_extract(out.path(), g.body) == 0);
  CHECK(shell("diff -r --no-dereference '" + src.path() + "' '" + out.path() +
              "'") == 0);
  // A second upload replaces the directory as a whole.
  auto small = put_tar(d, "tree", make_tar({file("only.txt", "x")}));
  CHECK(small.status == 200);
  CHECK(small.json.at("result").at("replaced") == true);
  CHECK(read_file(cur + "/tree/only.txt") == "x");
  CHECK(!exists(cur + "/tree/d1"));
  CHECK(leftovers(cur).empty());
}

TEST_CASE("bulk: tar entries leaving the target are refused with no effect") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto cur = d.current("a", "s");
  auto refused = [&](std::vector<tar_entry> entries, const std::string& why) {
    CAPTURE(why);
    auto r = put_tar(d, "t", make_tar(entries));
    INFO(r.body);
    CHECK(r.status == 400);
    CHECK(error_code(r) == "invalid_argument");
    CHECK(r.body.find(why) != std::string::npos);
    CHECK(!exists(cur + "/t"));
    CHECK(leftovers(cur).empty());
  };
  refused({file("ok.txt", "fine"), file("../x", "escape")}, "`..` component");
  CHECK(!exists(cur + "/x"));
  refused({file("/abs", "escape")}, "absolute name");
  refused({node("null", AE_IFCHR)}, "device nodes, FIFOs and sockets");
  refused({node("fifo", AE_IFIFO)}, "device nodes, FIFOs and sockets");
  // A symlink is stored as a link; nothing is written through it.
  auto before = read_file("/etc/passwd");
  refused({symlink_to("link", "/etc"), file("link/passwd", "overwritten")},
          "symlink");
  CHECK(read_file("/etc/passwd") == before);
  refused({node("sub", AE_IFDIR), symlink_to("rel", "sub"),
           file("rel/f", "through a relative link")},
          "symlink");
  auto ok = put_tar(d, "t",
                    make_tar({symlink_to("link", "/etc"), file("f", "data"),
                              hardlink_to("h", "f")}));
  INFO(ok.body);
  REQUIRE(ok.status == 200);
  char target[64] = {};
  REQUIRE(::readlink((cur + "/t/link").c_str(), target, sizeof target - 1) > 0);
  CHECK(std::string{target} == "/etc");
  CHECK(read_file(cur + "/t/h") == "data");
  // Nor can the target itself be reached through a link.
  REQUIRE(::symlink("/tmp", (cur + "/via").c_str()) == 0);
  auto through = put_tar(d, "via/t", make_tar({file("f", "x")}));
  CHECK(through.status == 400);
  // Not a tar stream at all.
  auto junk = put_tar(d, "j", std::string(4096, 'j'));
  CHECK(junk.status == 400);
  CHECK(!exists(cur + "/j"));
  CHECK(leftovers(cur).empty());
}

TEST_CASE("bulk: 10,000 nested directories are refused, never a crash") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto cur = d.current("a", "s");
  std::string deep;
  for (int i = 0; i < 10000; ++i)
    deep += "d/";
  auto r = put_tar(d, "deep",
                   make_tar({node(deep, AE_IFDIR), file(deep + "f", "x")}));
  INFO(r.body.substr(0, 300));
  CHECK(r.status == 400);
  CHECK(r.body.find("nested deeper than") != std::string::npos);
  CHECK(!exists(cur + "/deep"));
  CHECK(leftovers(cur).empty());
  // Such a tree made inside the workspace cannot be downloaded either: the
  // stream is cut off with the error logged, and the daemon carries on.
  int fd = ::open(cur.c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(fd >= 0);
  REQUIRE(::mkdirat(fd, "nest", 0755) == 0);
  int at = ::openat(fd, "nest", O_RDONLY | O_DIRECTORY);
  ::close(fd);
  for (int i = 0; i < 10000; ++i) {
    REQUIRE(::mkdirat(at, "d", 0755) == 0);
    int next = ::openat(at, "d", O_RDONLY | O_DIRECTORY);
    ::close(at);
    at = next;
  }
  ::close(at);
  auto g = get(d, "nest");
  CHECK(!g.complete);
  CHECK(expect_ok(c.rpc("session.describe", ids("a", "s")))
            .contains("session_id"));
}

TEST_CASE("bulk: requests without the token get 401") {
  daemon_process d{with_token("secret")};
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto r = put(d, "f", "data");
  CHECK(r.status == 401);
  CHECK(error_code(r) == "unauthorized");
  auto g = get(d, "f");
  CHECK(g.status == 401);
  bulk_request wrong;
  wrong.method = "GET";
  wrong.target = std::string{files_of_a_s} + "f";
  wrong.token = "wrong";
  CHECK(bulk_call(d.port(), wrong).status == 401);
  CHECK(!exists(d.current("a", "s") + "/f"));
  bulk_request right;
  right.target = wrong.target;
  right.token = "secret";
  right.length = 4;
  right.body = from_string("data");
  CHECK(bulk_call(d.port(), right).status == 200);
  right.method = "GET";
  right.body = {};
  auto back = bulk_call(d.port(), right);
  CHECK(back.status == 200);
  CHECK(back.body == "data");
  // A target that names no file is refused once the token is right.
  bulk_request shallow;
  shallow.method = "GET";
  shallow.target = "/v1/files/a";
  CHECK(bulk_call(d.port(), shallow).status == 401);
  shallow.token = "secret";
  auto refused = bulk_call(d.port(), shallow);
  CHECK(refused.status == 400);
  CHECK(refused.body.find("target must be /v1/files/{agent}/{session}/"
                          "{path}") != std::string::npos);
  // Each transfer is audited with the native wire's origin, and names
  // no files list (the E2B front's /files does). A download is audited
  // once its last byte is out, so its record may trail the client.
  std::vector<json::object> transfers;
  CHECK(eventually([&] {
    transfers.clear();
    auto audit = expect_ok(d.client().rpc("audit.list", {{"agent_id", "a"}}));
    for (const auto& e : audit.at("events").as_array()) {
      auto op = e.at("op").as_string();
      if (op == "file.upload" || op == "file.download")
        transfers.push_back(e.as_object());
    }
    return transfers.size() == 2;
  }));
  for (const auto& e : transfers) {
    CHECK(e.at("origin") == "http");
    CHECK_FALSE(e.contains("files"));
  }
}

TEST_CASE("bulk: size limits answer 413 and leave nothing behind") {
  daemon_process d{with_args({"--max-upload-bytes", "1048576",
                              "--max-session-upload-bytes", "1572864"})};
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto cur = d.current("a", "s");
  auto big = std::string(2 << 20, 'x');
  // Declared too large: refused before the body is sent.
  bulk_request declared;
  declared.target = std::string{files_of_a_s} + "big";
  declared.length = big.size();
  declared.expect_continue = true;
  declared.body = from_string(big);
  auto r = bulk_call(d.port(), declared);
  CHECK(r.status == 413);
  CHECK(error_code(r) == "payload_too_large");
  // Chunked: refused once the body passes the limit.
  bulk_request chunked;
  chunked.target = declared.target;
  chunked.body = from_string(big);
  auto c = bulk_call(d.port(), chunked);
  CHECK(c.status == 413);
  CHECK(error_code(c) == "payload_too_large");
  auto t = put_tar(d, "tree",
                   make_tar({file("a", std::string(600 << 10, 'a')),
                             file("b", std::string(600 << 10, 'b'))}));
  CHECK(t.status == 413);
  CHECK(!exists(cur + "/big"));
  CHECK(!exists(cur + "/tree"));
  CHECK(leftovers(cur).empty());
  // The session's uploads in flight together: one of 1 MiB is still
  // sending, a second of 1 MiB would pass 1.5 MiB.
  auto slow = std::async(std::launch::async, [&] {
    bulk_request s;
    s.target = std::string{files_of_a_s} + "slow";
    s.length = 1 << 20;
    uint64_t sent = 0;
    s.body = [&](char* buf, size_t) -> size_t {
      if (sent == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds{1500});
      size_t n = sent < (1 << 20) ? 4096 : 0;
      std::memset(buf, 's', n);
      sent += n;
      return n;
    };
    return bulk_call(d.port(), s);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds{500});
  auto second = put(d, "second", std::string(1 << 20, 'y'));
  CHECK(second.status == 413);
  CHECK(second.body.find("in flight") != std::string::npos);
  CHECK(slow.get().status == 200);
  CHECK(put(d, "third", std::string(1 << 20, 'z')).status == 200);
  CHECK(!exists(cur + "/second"));
}

TEST_CASE("bulk: an upload during a checkpoint is refused with conflict") {
  daemon_process d;
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  if (!fault_injection_built(c))
    return;
  REQUIRE(put(d, "f", "old").status == 200);
  expect_ok(
      c.rpc("debug.fault", fault("a", "s", "checkpoint.create.before_snapshot",
                                 "delay", 1500)));
  auto other = d.new_client();
  auto cp = std::async(std::launch::async, [&] {
    return other->rpc("checkpoint.create",
                      with(ids("a", "s"), {{"checkpoint_id", "c1"}}));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds{400});
  auto r = put(d, "f", "data");
  CHECK(r.status == 400);
  CHECK(error_code(r) == "conflict");
  // A download reads, like file.read, and may.
  CHECK(get(d, "f").body == "old");
  expect_ok(cp.get());
  CHECK(read_file(d.current("a", "s") + "/f") == "old");
  CHECK(put(d, "f", "data").status == 200);
  CHECK(get(d, "f").body == "data");
}

TEST_CASE("bulk: a connection serves the next request after a transfer") {
  daemon_process d;
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  raw_socket sock{d.port()};
  // Pipelined: an upload, a download of it, an RPC, on one connection.
  std::string rpc_body = R"({"action":"file.stat","params":)"
                         R"({"agent_id":"a","session_id":"s","path":"k"}})";
  REQUIRE(sock.send_all("PUT /v1/files/a/s/k HTTP/1.1\r\nHost: x\r\n"
                        "Content-Length: 5\r\n\r\nhello"
                        "GET /v1/files/a/s/k HTTP/1.1\r\nHost: x\r\n\r\n"
                        "POST /v1/rpc HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                        std::to_string(rpc_body.size()) + "\r\n\r\n" +
                        rpc_body));
  auto got = sock.read_for(std::chrono::seconds{10}, "mtime_ns");
  INFO(got);
  CHECK(got.find(R"("size":5)") != std::string::npos);
  CHECK(got.find("\r\n\r\nhello") != std::string::npos);
  CHECK(got.find("mtime_ns") != std::string::npos);
  CHECK(!sock.closed_by_daemon());
}
