// SPDX-License-Identifier: Apache-2.0
// The control plane out of reach: a sandboxed program cannot connect to
// the daemon's RPC or metrics addresses, nor to a --deny-connect
// destination, through any address of the machine and in every network
// mode, while other local services stay reachable. Tried from real
// sandboxes against the kernel's cgroup connect programs.
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/temp_dir.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace allox;
using namespace allox::test;

namespace {

/// A TCP listener on 127.0.0.1 that the test holds open (never accepts:
/// the kernel completes connections into its backlog).
struct listener {
  explicit listener(uint16_t at = 0) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(at);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 64) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~listener() { ::close(fd); }
  int fd = -1;
  uint16_t port = 0;
};

/// A non-loopback IPv4 address of this machine, if it has one.
std::string other_address() {
  ifaddrs* list = nullptr;
  std::string found;
  if (::getifaddrs(&list) != 0)
    return found;
  for (auto* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET)
      continue;
    char buf[INET_ADDRSTRLEN];
    auto* a = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    ::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    if (std::string{buf}.rfind("127.", 0) != 0)
      found = buf;
  }
  ::freeifaddrs(list);
  return found;
}

/// Connects from a sandbox of session a/`s` to each "host port" target;
/// each target's result: "open", or the errno name of the failure.
std::map<std::string, std::string>
try_connect(http_client& c, const std::string& s,
            const std::vector<std::pair<std::string, uint16_t>>& targets) {
  std::string script = R"(
import errno, socket, sys
for line in sys.argv[1:]:
    host, port = line.rsplit(" ", 1)
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(fam, socket.SOCK_STREAM)
    sock.settimeout(3)
    try:
        sock.connect((host, int(port)))
        result = "open"
    except OSError as e:
        result = errno.errorcode.get(e.errno, str(e.errno))
    print(line + "=" + result)
)";
  json::array argv{"python3", "-c", script};
  for (const auto& [host, port] : targets)
    argv.emplace_back(host + " " + std::to_string(port));
  auto id = run_id(start(c, "a", s, argv));
  auto row = wait_done(c, "a", s, id);
  INFO(output(c, "a", s, id, "stderr"));
  REQUIRE(row.at("root_exit_code") == 0);
  std::map<std::string, std::string> results;
  std::istringstream lines{output(c, "a", s, id)};
  for (std::string line; std::getline(lines, line);)
    if (auto eq = line.rfind('='); eq != std::string::npos)
      results[line.substr(0, eq)] = line.substr(eq + 1);
  return results;
}

std::string key(const std::string& host, uint16_t port) {
  return host + " " + std::to_string(port);
}

} // namespace

TEST_CASE("connect guard: runs cannot reach the daemon's RPC or metrics "
          "port through any local address, nor a denied destination, in "
          "any network mode") {
  listener control;
  listener denied;
  auto metrics = free_port();
  // On the IPv6 wildcard the daemon answers on every address, IPv4 too.
  daemon_options o = with_execution(
      {"--metrics-listen", "127.0.0.1:" + std::to_string(metrics),
       "--deny-connect", "127.0.0.1:" + std::to_string(denied.port)});
  o.host = "::";
  o.token = "secret";
  daemon_process d{o};
  d.start();
  auto& c = d.client();
  auto port = d.port();
  std::vector<std::pair<std::string, uint16_t>> refused{
      {"127.0.0.1", port},
      {"127.0.0.2", port},
      {"0.0.0.0", port},
      {"::1", port},
      {"::", port},
      {"::ffff:127.0.0.1", port},
      {"127.0.0.1", metrics},
      {"127.0.0.1", denied.port},
      {"127.0.0.3", denied.port}};
  if (auto other = other_address(); !other.empty())
    refused.push_back({other, port});
  for (const char* network : {"inherit", "isolated", "proxy"}) {
    CAPTURE(network);
    std::string s = std::string{"s-"} + network;
    expect_ok(c.rpc("session.create", ids("a", s)));
    expect_ok(
        c.rpc("session.configure", with(ids("a", s), {{"network", network}})));
    auto targets = refused;
    targets.push_back({"127.0.0.1", control.port});
    auto results = try_connect(c, s, targets);
    for (const auto& [host, p] : refused) {
      CAPTURE(key(host, p));
      CHECK(results[key(host, p)] == "EPERM");
    }
    // Another local service: reachable in the host's network, and in an
    // isolated or proxy one simply absent (nothing listens there), never
    // EPERM. (The proxy's broker refuses the daemon's addresses too:
    // proxy_network_test.cpp.)
    CHECK(results[key("127.0.0.1", control.port)] ==
          (std::string{network} == "inherit" ? "open" : "ECONNREFUSED"));
  }
}

TEST_CASE("connect guard: with --connect-guard off the daemon's port is "
          "reachable from a run, so the refusal above is the guard's") {
  daemon_process d{with_execution({"--connect-guard", "off"})};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto results = try_connect(c, "s", {{"127.0.0.1", d.port()}});
  CHECK(results[key("127.0.0.1", d.port())] == "open");
}

TEST_CASE("connect guard: a malformed --deny-connect stops the daemon with "
          "the reason") {
  temp_dir dir;
  auto [code, out] = run_daemon(
      {"--root", dir / "store", "--loop-image", dir / "store.img",
       "--loop-size", "1G", "--listen",
       "127.0.0.1:" + std::to_string(free_port()), "--process-audit-root",
       dir / "runs", "--deny-connect", "example.org:80"},
      std::chrono::seconds{30});
  CHECK(code == 1);
  CHECK(out.find("--deny-connect: not an IP address: example.org") !=
        std::string::npos);
  CHECK(out.find("store unmounted") != std::string::npos);
}
