// SPDX-License-Identifier: Apache-2.0
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
#include "tools/endpoint-client/endpoint_client.hpp"

#include <boost/beast/core/detail/base64.hpp>
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

namespace b64 = boost::beast::detail::base64;

std::string encode(const std::string& data) {
  std::string out(b64::encoded_size(data.size()), '\0');
  out.resize(b64::encode(out.data(), data.data(), data.size()));
  return out;
}

/// The daemon's base64 (well-formed): its bytes.
std::string decode(std::string_view text) {
  std::string out(b64::decoded_size(text.size()), '\0');
  out.resize(b64::decode(out.data(), text.data(), text.size()).first);
  return out;
}

int usage() {
  std::cerr << "usage: allox-share enable [--scope S] [--permission "
               "read|write] | disable | status | list AGENT/SESSION [PATH] "
               "| read AGENT/SESSION PATH | write AGENT/SESSION PATH < data\n";
  return 2;
}

/// Sends one request; 0 with the result in `result`, else the exit code
/// (the error already said).
int call(const std::string& action, const json::object& params,
         json::value& result) {
  auto reply = allox::tools::endpoint_request("allox-share", action, params);
  if (!reply)
    return 3;
  const auto& o = *reply;
  if (!(o.if_contains("ok") && o.at("ok") == true)) {
    auto* error = o.if_contains("error");
    std::cerr << "allox-share: "
              << (error && error->is_string() ? std::string{error->get_string()}
                                              : json::serialize(o))
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
