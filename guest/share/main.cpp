// allox-share: session-to-session sharing from inside a run, over the
// event endpoint at $ALLOX_EVENTS_SOCKET (/run/allox/events.sock). Bound
// into every run at /run/allox/bin/allox-share. The daemon knows the
// calling session from its cgroup; nothing here names it (and the daemon
// refuses a request that tries to).
//
//   allox-share enable [--scope S] [--permission read|write]   share.enable
//   allox-share disable                                        share.disable
//   allox-share status                                         share.status
//   allox-share list AGENT/SESSION [PATH]                      share.list
//   allox-share read AGENT/SESSION PATH    the file's bytes to stdout
//   allox-share write AGENT/SESSION PATH   the file's bytes from stdin
//                                          (at most 256 KiB)
//
// Other results are printed as one JSON line, errors on stderr. Exit 0
// when the daemon answered ok, 1 when it refused, 2 on bad usage or
// input, 3 when the endpoint cannot be reached (or 15 s passed).
#include <boost/json.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace json = boost::json;

namespace {

constexpr int timeout_seconds = 15;
constexpr size_t max_file = 256 * 1024;

constexpr char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string encode(const std::string& data) {
  std::string out;
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    uint32_t n = (static_cast<unsigned char>(data[i]) << 16) |
                 (static_cast<unsigned char>(data[i + 1]) << 8) |
                 static_cast<unsigned char>(data[i + 2]);
    for (int shift : {18, 12, 6, 0})
      out.push_back(alphabet[(n >> shift) & 63]);
  }
  if (auto rest = data.size() - i; rest > 0) {
    uint32_t n = static_cast<unsigned char>(data[i]) << 16;
    if (rest == 2)
      n |= static_cast<unsigned char>(data[i + 1]) << 8;
    out.push_back(alphabet[(n >> 18) & 63]);
    out.push_back(alphabet[(n >> 12) & 63]);
    out.push_back(rest == 2 ? alphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

/// The daemon's base64 (well-formed): its bytes.
std::string decode(std::string_view text) {
  std::array<int, 256> value{};
  value.fill(-1);
  for (int i = 0; i < 64; ++i)
    value[static_cast<unsigned char>(alphabet[i])] = i;
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : text) {
    int v = value[static_cast<unsigned char>(ch)];
    if (v < 0)
      break; // '=' padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

int usage() {
  std::cerr << "usage: allox-share enable [--scope S] [--permission "
               "read|write] | disable | status | list AGENT/SESSION [PATH] "
               "| read AGENT/SESSION PATH | write AGENT/SESSION PATH < data\n";
  return 2;
}

/// Sends one request line and reads the reply; 0 with the result in
/// `result`, else the exit code (the error already said).
int call(const std::string& action, const json::object& params,
         json::value& result) {
  const char* path = std::getenv("ALLOX_EVENTS_SOCKET");
  std::string where = path && *path ? path : "/run/allox/events.sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd < 0 || where.size() >= sizeof addr.sun_path) {
    std::cerr << "allox-share: no socket for " << where << "\n";
    return 3;
  }
  std::memcpy(addr.sun_path, where.c_str(), where.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::cerr << "allox-share: cannot reach " << where << ": "
              << std::strerror(errno) << "\n";
    return 3;
  }
  auto line =
      json::serialize(json::object{{"action", action}, {"params", params}}) +
      "\n";
  for (size_t done = 0; done < line.size();) {
    auto n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      std::cerr << "allox-share: the endpoint went away\n";
      return 3;
    }
    done += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[65536];
  while (reply.find('\n') == std::string::npos) {
    auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  boost::system::error_code ec;
  auto doc = json::parse(reply.substr(0, reply.find('\n')), ec);
  if (ec || !doc.is_object()) {
    std::cerr << "allox-share: no reply from the endpoint\n";
    return 3;
  }
  const auto& o = doc.as_object();
  if (!(o.if_contains("ok") && o.at("ok") == true)) {
    auto* error = o.if_contains("error");
    std::cerr << "allox-share: "
              << (error && error->is_string()
                      ? std::string{error->get_string()}
                      : json::serialize(doc))
              << "\n";
    return 1;
  }
  result = o.contains("result") ? o.at("result") : json::value{};
  return 0;
}

/// "agent/session" into the target's ids.
bool target(const char* text, json::object& p) {
  std::string t{text};
  auto slash = t.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == t.size() ||
      t.find('/', slash + 1) != std::string::npos)
    return false;
  p["target_agent_id"] = t.substr(0, slash);
  p["target_session_id"] = t.substr(slash + 1);
  return true;
}

/// Prints a result as one JSON line.
int print(int rc, const json::value& result) {
  if (rc == 0)
    std::cout << json::serialize(result) << "\n";
  return rc;
}

} // namespace

int main(int argc, char** argv) {
  ::signal(SIGALRM, [](int) { ::_exit(3); });
  ::alarm(timeout_seconds);
  if (argc < 2)
    return usage();
  std::string cmd = argv[1];
  json::object p;
  json::value result;
  if (cmd == "enable") {
    for (int i = 2; i < argc; ++i)
      if (std::strcmp(argv[i], "--scope") == 0 && i + 1 < argc)
        p["scope"] = argv[++i];
      else if (std::strcmp(argv[i], "--permission") == 0 && i + 1 < argc)
        p["permission"] = argv[++i];
      else
        return usage();
    return print(call("share.enable", p, result), result);
  }
  if ((cmd == "disable" || cmd == "status") && argc == 2)
    return print(call("share." + cmd, p, result), result);
  if (cmd == "list" && (argc == 3 || argc == 4)) {
    if (!target(argv[2], p))
      return usage();
    if (argc == 4)
      p["path"] = argv[3];
    return print(call("share.list", p, result), result);
  }
  if ((cmd == "read" || cmd == "write") && argc == 4) {
    if (!target(argv[2], p))
      return usage();
    p["path"] = argv[3];
    if (cmd == "read") {
      int rc = call("share.read", p, result);
      if (rc != 0)
        return rc;
      const auto* data = result.is_object()
                             ? result.as_object().if_contains("data_base64")
                             : nullptr;
      if (data == nullptr || !data->is_string()) {
        std::cerr << "allox-share: no data in the reply\n";
        return 3;
      }
      auto bytes = decode(data->get_string());
      std::fwrite(bytes.data(), 1, bytes.size(), stdout);
      return std::fflush(stdout) == 0 ? 0 : 3;
    }
    std::string data;
    char buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, stdin)) > 0;) {
      data.append(buf, n);
      if (data.size() > max_file) {
        std::cerr << "allox-share: write takes at most 256 KiB\n";
        return 2;
      }
    }
    p["data_base64"] = encode(data);
    return print(call("share.write", p, result), result);
  }
  return usage();
}
