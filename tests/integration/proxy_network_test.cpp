// SPDX-License-Identifier: Apache-2.0
// Proxy network mode from real sandboxes: the session's own namespace
// whose only way out is the egress broker, an HTTPS download through the
// proxy from an allowed local server, refusals for hosts off the
// allowlist and for private addresses reached by name, plain HTTP in
// absolute form, live counters and the audit of every attempt.
//
// Nothing leaves the machine: each test moves its thread into a network
// namespace of its own (loopback only) before starting the daemon and the
// test servers, which inherit it, and moves back at the end.
#include "guest/net/netns.hpp"
#include "tests/fixtures/daemon.hpp"
#include "tests/fixtures/runs.hpp"
#include "tests/fixtures/temp_dir.hpp"
#include "tests/fixtures/wait.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

using namespace allox;
using namespace allox::test;

namespace {

/// The calling thread in a fresh network namespace (loopback up) for the
/// object's lifetime; processes it starts meanwhile are born there.
class test_network {
public:
  test_network() {
    home_.reset(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    REQUIRE(home_);
    auto made = net::make_proxy_namespace();
    REQUIRE(made);
    ns_ = std::move(made->ns);
    REQUIRE(::setns(ns_.get(), CLONE_NEWNET) == 0);
  }
  ~test_network() { ::setns(home_.get(), CLONE_NEWNET); }
  test_network(const test_network&) = delete;
  test_network& operator=(const test_network&) = delete;

private:
  os::unique_fd home_, ns_;
};

/// Debian's python3 serving `dir` over HTTPS (a self-signed certificate
/// for localhost and 127.0.0.1) and plain HTTP on loopback ports of its
/// own choosing.
class local_servers {
public:
  explicit local_servers(const temp_dir& dir) {
    cert_ = dir / "cert.pem";
    auto key = dir / "key.pem";
    auto cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "
               "/CN=localhost -addext "
               "subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
               key + " -out " + cert_ + " 2>/dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    auto script = dir / "serve.py";
    std::ofstream{script} << R"(
import functools, http.server, ssl, sys, threading
root, cert, key = sys.argv[1:4]
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
Handler = functools.partial(Quiet, directory=root)
tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=plain.serve_forever, daemon=True).start()
import socket
def echo_upper(listener):
    while True:
        conn, _ = listener.accept()
        got = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            got += chunk
        conn.sendall(got.upper())
        conn.close()
echo = socket.create_server(("127.0.0.1", 0))
threading.Thread(target=echo_upper, args=(echo,), daemon=True).start()
print(tls.server_address[1], plain.server_address[1], echo.getsockname()[1],
      flush=True)
tls.serve_forever()
)";
    root_ = dir / "www";
    REQUIRE(::mkdir(root_.c_str(), 0755) == 0);
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::dup2(fds[1], 1);
      ::execl("/usr/bin/python3", "python3", script.c_str(), root_.c_str(),
              cert_.c_str(), key.c_str(), nullptr);
      ::_exit(127);
    }
    ::close(fds[1]);
    FILE* out = ::fdopen(fds[0], "r");
    REQUIRE(std::fscanf(out, "%hu %hu %hu", &tls_port, &plain_port,
                        &echo_port) == 3);
    std::fclose(out);
  }
  ~local_servers() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  local_servers(const local_servers&) = delete;
  local_servers& operator=(const local_servers&) = delete;

  /// Serves `content` at /`name`.
  void put(const std::string& name, const std::string& content) const {
    std::ofstream{root_ + "/" + name, std::ios::binary} << content;
  }
  std::string certificate() const { return read_file(cert_); }

  uint16_t tls_port = 0;
  uint16_t plain_port = 0;
  /// Reads to the end, answers in upper case, closes.
  uint16_t echo_port = 0;

private:
  std::string cert_, root_;
  pid_t pid_ = -1;
};

std::string port_text(uint16_t p) {
  return std::to_string(p);
}

/// An invalid_argument response whose message contains `why`.
void expect_invalid(const http_response& r, const std::string& why) {
  expect_error(r, 400, "invalid_argument");
  INFO(r.body);
  CHECK(std::string{r.json.at("error").as_string()}.find(why) !=
        std::string::npos);
}

/// Runs `script` in session a/`s`; {exit code, stdout, stderr}.
struct script_result {
  int64_t code;
  std::string out, err;
};
script_result run_script(http_client& c, const std::string& s,
                         const std::string& script) {
  auto id = run_id(sh(c, "a", s, script));
  auto row = wait_done(c, "a", s, id);
  return {row.at("root_exit_code").as_int64(), output(c, "a", s, id),
          output(c, "a", s, id, "stderr")};
}

json::object egress(std::vector<std::string> allow,
                    std::vector<std::string> deny = {}) {
  return json::object{{"allow", json::array(allow.begin(), allow.end())},
                      {"deny", json::array(deny.begin(), deny.end())}};
}

/// curl through the proxy as a package manager would: the proxy from the
/// environment, loopback names not exempted (NO_PROXY would send them to
/// the sandbox's own loopback). Prints the CONNECT status on stdout.
std::string curl(const std::string& url, const std::string& to) {
  return "env -u NO_PROXY -u no_proxy curl -sS --max-time 20 --cacert "
         "/workspace/ca.pem -o " +
         to + " -w '%{http_connect} %{http_code}\\n' " + url;
}

} // namespace

TEST_CASE("proxy network: a download through the proxy reaches an allowed "
          "local server over HTTPS and plain HTTP, and nothing else gets "
          "out") {
  test_network net;
  temp_dir dir;
  local_servers www{dir};
  std::string blob(1 << 20, '\0');
  for (size_t i = 0; i < blob.size(); ++i)
    blob[i] = static_cast<char>((i * 7919) >> 3);
  www.put("blob", blob);
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  auto tls = port_text(www.tls_port);
  auto plain = port_text(www.plain_port);
  expect_ok(c.rpc("session.create", ids("a", "s")));
  auto conf = expect_ok(
      c.rpc("session.configure",
            with(ids("a", "s"),
                 {{"network", "proxy"},
                  {"egress", egress({"localhost:" + tls, "127.0.0.1/32:" + tls,
                                     "127.0.0.1:" + plain})}})));
  CHECK(conf.at("network") == "proxy");
  expect_ok(c.rpc(
      "file.write",
      with(ids("a", "s"), {{"path", "ca.pem"}, {"data", www.certificate()}})));

  SUBCASE("HTTPS by name and plain HTTP by address are relayed") {
    auto r = run_script(
        c, "s",
        "echo $HTTPS_PROXY $NO_PROXY; " +
            curl("https://localhost:" + tls + "/blob", "/workspace/tls.bin") +
            " && " +
            curl("http://127.0.0.1:" + plain + "/blob",
                 "/workspace/plain.bin") +
            " && stat -c %U /workspace/tls.bin");
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("http://127.0.0.1:3128 127.0.0.1,localhost,::1") == 0);
    CHECK(r.out.find("200 200") != std::string::npos); // the tunnel
    CHECK(r.out.find("000 200") != std::string::npos); // absolute form
    CHECK(read_file(d.current("a", "s") + "/tls.bin") == blob);
    CHECK(read_file(d.current("a", "s") + "/plain.bin") == blob);
    auto st = expect_ok(c.rpc("network.status", ids("a", "s")));
    CHECK(st.at("mode") == "proxy");
    CHECK(st.at("active") == true);
    CHECK(st.at("proxy_url") == "http://127.0.0.1:3128");
    const auto& conns = st.at("connections").as_object();
    CHECK(conns.at("total").as_int64() == 2);
    CHECK(conns.at("refused").as_int64() == 0);
    CHECK(conns.at("bytes_received").as_int64() >= 2 * (1 << 20));
    // Every attempt is in the session's trail, with what it carried.
    CHECK(eventually([&] {
      auto trail = expect_ok(c.rpc(
          "audit.list", with(ids("a", "s"), {{"op", "network.connect"}})));
      return trail.at("events").as_array().size() == 2;
    }));
    auto events =
        expect_ok(c.rpc("audit.list",
                        with(ids("a", "s"), {{"op", "network.connect"}})))
            .at("events")
            .as_array();
    for (const auto& e : events) {
      const auto& f = e.as_object();
      CHECK(f.at("allowed") == true);
      CHECK(f.at("bytes_received").as_int64() > (1 << 20));
      CHECK(f.at("address") == "127.0.0.1");
    }
  }

  SUBCASE("a tunnel passes a half-close on and ends when both sides have") {
    auto echo = port_text(www.echo_port);
    expect_ok(c.rpc(
        "session.configure",
        with(ids("a", "s"), {{"egress", egress({"127.0.0.1:" + echo})}})));
    auto r = run_script(c, "s",
                        R"(python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT 127.0.0.1:)" +
                            echo + R"( HTTP/1.1\r\n\r\n" + b"half" * 50000)
head = b""
while not head.endswith(b"\r\n\r\n"):
    head += s.recv(1)
s.shutdown(socket.SHUT_WR)
got = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    got += chunk
print(head.split(b"\r\n")[0].decode(), got == b"HALF" * 50000)
')");
    INFO(r.err);
    CHECK(r.out == "HTTP/1.1 200 Connection Established True\n");
    CHECK(eventually([&] {
      auto st = expect_ok(c.rpc("network.status", ids("a", "s")));
      return st.at("connections").at("open") == 0;
    }));
    auto st = expect_ok(c.rpc("network.status", ids("a", "s")));
    CHECK(st.at("connections").at("bytes_sent").as_int64() == 200000);
    // The destination's bytes only (not the proxy's own 200).
    CHECK(st.at("connections").at("bytes_received").as_int64() == 200000);
  }

  SUBCASE("allox-network carries a raw TCP stream, and reports a refusal") {
    auto echo = port_text(www.echo_port);
    expect_ok(c.rpc(
        "session.configure",
        with(ids("a", "s"), {{"egress", egress({"127.0.0.1:" + echo})}})));
    auto r =
        run_script(c, "s",
                   "printf 'raw bytes' | /run/allox/bin/allox-network connect "
                   "127.0.0.1 " +
                       echo +
                       "; echo; /run/allox/bin/allox-network connect "
                       "example.org 22 </dev/null; echo \"exit $?\"");
    CHECK(r.out == "RAW BYTES\nexit 1\n");
    CHECK(r.err.find("allox-network: HTTP/1.1 403 Forbidden: example.org:22 "
                     "refused by the egress policy: not on the egress "
                     "allowlist") != std::string::npos);
  }

  SUBCASE("a host off the allowlist, a private address reached by name and "
          "a direct connection are refused") {
    // localhost resolves to 127.0.0.1: a name rule alone never reaches a
    // loopback or private address (DNS rebinding); only the address rule
    // above did. Dropped here, the same download is refused.
    expect_ok(
        c.rpc("session.configure",
              with(ids("a", "s"),
                   {{"egress", egress({"localhost:" + tls, "*.example.org:443"},
                                      {"bad.example.org:*"})}})));
    auto r = run_script(
        c, "s",
        curl("https://localhost:" + tls + "/blob", "/dev/null") + "; " +
            curl("https://bad.example.org/", "/dev/null") + "; " +
            curl("https://api.example.com/", "/dev/null") + "; " +
            curl("http://127.0.0.1:" + plain + "/blob", "/dev/null") +
            "; python3 -c 'import socket; "
            "socket.create_connection((\"127.0.0.1\", " +
            tls + "), 3)' 2>&1 | tail -1");
    INFO(r.err);
    std::istringstream lines{r.out};
    std::vector<std::string> got;
    for (std::string l; std::getline(lines, l);)
      got.push_back(l);
    REQUIRE(got.size() == 5);
    CHECK(got[0].rfind("403", 0) == 0); // protected address by name
    CHECK(got[1].rfind("403", 0) == 0); // denied by rule
    CHECK(got[2].rfind("403", 0) == 0); // off the allowlist
    CHECK(got[3] == "000 403");         // plain HTTP, port not allowed
    // The server is not in the sandbox's namespace at all.
    CHECK(got[4].find("ConnectionRefusedError") != std::string::npos);
    auto st = expect_ok(c.rpc("network.status", ids("a", "s")));
    CHECK(st.at("connections").at("refused").as_int64() == 4);
    CHECK(st.at("connections").at("total").as_int64() == 4);
    CHECK(eventually([&] {
      return audit_ops(c, with(ids("a", "s"), {{"op", "network.connect"}}))
                 .size() == 4;
    }));
    auto events =
        expect_ok(c.rpc("audit.list",
                        with(ids("a", "s"), {{"op", "network.connect"}})))
            .at("events")
            .as_array();
    std::string all = json::serialize(events);
    CHECK(all.find("private, local or special-purpose") != std::string::npos);
    CHECK(all.find("denied by bad.example.org:*") != std::string::npos);
    CHECK(all.find("not on the egress allowlist") != std::string::npos);

    // Whatever the policy, the broker never reaches the daemon itself:
    // with all of loopback allowed, the local server is reachable and the
    // RPC port is not, tunnelled or forwarded.
    expect_ok(
        c.rpc("session.configure",
              with(ids("a", "s"), {{"egress", egress({"127.0.0.0/8:*"})}})));
    auto rpc = "127.0.0.1:" + port_text(d.port());
    auto r2 = run_script(
        c, "s",
        curl("https://127.0.0.1:" + tls + "/blob", "/dev/null") + "; " +
            curl("http://" + rpc + "/health", "/dev/null") + "; " +
            curl("-p http://" + rpc + "/health", "/dev/null"));
    CHECK(r2.out == "200 200\n000 403\n403 000\n");
    auto own = "own service 127.0.0.0/8:" + port_text(d.port()) +
               " is never reachable";
    CHECK(eventually([&] {
      auto trail = json::serialize(expect_ok(c.rpc(
          "audit.list", with(ids("a", "s"), {{"op", "network.connect"}}))));
      return trail.find(own) != std::string::npos;
    }));
  }
}

TEST_CASE("proxy network: runs of a session share its namespace, other "
          "sessions and modes do not, and leaving proxy mode closes it") {
  test_network net;
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  for (const char* s : {"s1", "s2"}) {
    expect_ok(c.rpc("session.create", ids("a", s)));
    expect_ok(
        c.rpc("session.configure", with(ids("a", s), {{"network", "proxy"}})));
  }
  auto st = expect_ok(c.rpc("network.status", ids("a", "s1")));
  CHECK(st.at("active") == false); // made at the first run
  auto inode = [&](const std::string& s) {
    auto r = run_script(c, s, "stat -L -c %i /proc/self/ns/net");
    REQUIRE(r.code == 0);
    return std::stoll(r.out);
  };
  auto first = inode("s1");
  CHECK(inode("s1") == first);
  CHECK(inode("s2") != first);
  st = expect_ok(c.rpc("network.status", ids("a", "s1")));
  CHECK(st.at("active") == true);
  CHECK(st.at("namespace_inode").as_int64() == first);
  // Only loopback, and the proxy listening on it.
  auto r = run_script(c, "s1",
                      "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; "
                      "grep -c '0100007F:0C38 00000000:0000 0A' /proc/net/tcp");
  CHECK(r.out == "lo\n1\n");
  // network.configure (the prototype's action) answers with the status.
  auto back = expect_ok(c.rpc("network.configure",
                              with(ids("a", "s1"), {{"mode", " Isolated "}})));
  CHECK(back.at("mode") == "isolated");
  CHECK(back.at("active") == false);
  CHECK(inode("s1") != first);
  expect_invalid(
      c.rpc("network.configure", with(ids("a", "s1"), {{"mode", "bridge"}})),
      "network mode must be inherit, isolated, or proxy");
}

TEST_CASE("proxy network: malformed egress rules are refused with the rule "
          "and change nothing") {
  daemon_process d{with_execution()};
  d.start();
  auto& c = d.client();
  expect_ok(c.rpc("session.create", ids("a", "s")));
  expect_ok(
      c.rpc("session.configure",
            with(ids("a", "s"), {{"network", "proxy"},
                                 {"egress", egress({"a.example:443"})}})));
  for (const auto& [rule, why] :
       std::vector<std::pair<std::string, std::string>>{
           {"example.org", "expected HOST:PORT"},
           {"example.org:0", "bad port 0"},
           {"ex*ample.org:443", "not a host name"},
           {"10.0.0.0/33:443", "prefix length over /32"},
           {"fd00::/8:443", "in brackets"},
           {"example.org:9-1", "bad port range"}}) {
    CAPTURE(rule);
    expect_invalid(c.rpc("session.configure",
                         with(ids("a", "s"), {{"egress", egress({rule})}})),
                   why);
  }
  expect_invalid(
      c.rpc("session.configure", with(ids("a", "s"), {{"egress", "all"}})),
      "egress must be an object");
  auto st = expect_ok(c.rpc("network.status", ids("a", "s")));
  CHECK(json::serialize(st.at("egress")) ==
        R"({"allow":["a.example:443"],"deny":[]})");
}
