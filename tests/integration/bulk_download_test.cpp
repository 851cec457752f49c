// SPDX-License-Identifier: Apache-2.0
// How a regular file's download is sent: its worker writes the head and
// the file to the socket itself (sendfile). A client that keeps reading,
// however slowly, is not idle; one that stops is closed as idle, and the
// worker then lets go of the file.
#include "tests/fixtures/bulk_client.hpp"
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/raw_socket.hpp"
#include "tests/fixtures/session_files.hpp"
#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

using namespace allox;
using namespace allox::test;
using namespace std::chrono_literals;

namespace {

/// Puts `size` bytes of a pattern as a/s/`path`; returns them.
std::string put_file(const daemon_process& d, const std::string& path,
                     size_t size) {
  std::string data(size, '\0');
  for (size_t i = 0; i < size; ++i)
    data[i] = static_cast<char>(i * 13 % 253);
  bulk_request r;
  r.target = "/v1/files/a/s/" + path;
  r.length = data.size();
  r.body = from_string(data);
  REQUIRE(bulk_call(d.port(), r).status == 200);
  return data;
}

/// Descriptors the daemon holds open on `path`.
int open_on(pid_t pid, const std::string& path) {
  int n = 0;
  auto dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* d = ::opendir(dir.c_str())) {
    while (auto* e = ::readdir(d)) {
      char target[4096];
      auto len = ::readlink((dir + "/" + e->d_name).c_str(), target,
                            sizeof target - 1);
      if (len > 0 && std::string(target, static_cast<size_t>(len)) == path)
        ++n;
    }
    ::closedir(d);
  }
  return n;
}

} // namespace

TEST_CASE("bulk download: a client reading slowly but steadily outlives "
          "the idle timeout") {
  daemon_process d{with_args({"--idle-timeout-ms", "1000"})};
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  auto data = put_file(d, "slow", 12 << 20);
  raw_socket sock{d.port()};
  // Read at most 256 KiB every 100 ms: the body takes at least 4.8 s, well
  // past the idle timeout, and the daemon's send buffer has a third of
  // itself free (when poll says it takes more) less often than once a
  // second. (Reads of 1 MiB let a grown buffer finish in under 2 s.)
  REQUIRE(sock.send_all("GET /v1/files/a/s/slow HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string got;
  auto received = [&] {
    auto head = got.find("\r\n\r\n");
    return head == std::string::npos ? size_t{0} : got.size() - head - 4;
  };
  std::vector<char> buf(256 << 10);
  auto started = std::chrono::steady_clock::now();
  while (received() < data.size() &&
         std::chrono::steady_clock::now() - started < 60s) {
    std::this_thread::sleep_for(100ms);
    auto n = ::recv(sock.fd(), buf.data(), buf.size(), MSG_DONTWAIT);
    if (n == 0)
      break;
    if (n > 0)
      got.append(buf.data(), static_cast<size_t>(n));
  }
  auto body = got.find("\r\n\r\n");
  REQUIRE(body != std::string::npos);
  CHECK(got.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(got.size() - body - 4 == data.size());
  CHECK(got.compare(body + 4, std::string::npos, data) == 0);
  CHECK(std::chrono::steady_clock::now() - started > 2s);
}

TEST_CASE("bulk download: a client that stops reading is closed as idle, "
          "and the file is let go") {
  daemon_process d{with_args({"--idle-timeout-ms", "1000"})};
  d.start();
  expect_ok(d.client().rpc("session.create", ids("a", "s")));
  put_file(d, "stuck", 64 << 20);
  auto path = d.current("a", "s") + "/stuck";
  raw_socket sock{d.port()};
  REQUIRE(sock.send_all("GET /v1/files/a/s/stuck HTTP/1.1\r\nHost: x\r\n\r\n"));
  // The worker has the file open while it waits for the client, and lets
  // go of it once the connection was closed as idle.
  CHECK(eventually([&] { return open_on(d.pid(), path) == 1; }));
  CHECK(eventually([&] { return open_on(d.pid(), path) == 0; }));
  // What the socket buffers held, then the end: the body is cut off.
  auto got = sock.read_until_closed(5s);
  CHECK(got.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(got.size() < (64u << 20));
  // Everyone else is served throughout.
  CHECK(d.new_client()->request("GET", "/health").status == 200);
}
