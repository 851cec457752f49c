// SPDX-License-Identifier: Apache-2.0
#include "daemon/destinations.hpp"

#include "guest/http/server.hpp"
#include "guest/log.hpp"

namespace allox::daemon {

/// The destinations no run may reach, as rule texts ("127.0.0.1:8092",
/// "[::1]:*"): the RPC and metrics addresses (every address of the
/// machine for a wildcard) and --deny-connect. The connect guard refuses
/// them to sandboxed processes, the egress broker to proxied connections.
expected<std::vector<std::string>> refused_destinations(const options& opts) {
  std::vector<std::string> texts;
  for (const auto& where : {opts.listen, opts.metrics_listen}) {
    if (where.empty())
      continue;
    auto hp = http::parse_listen(where);
    if (!hp)
      return hp.error();
#if ALLOX_TRACKING
    auto rules = bpf::listen_rules(hp->first, hp->second);
    if (!rules)
      return rules.error();
    for (const auto& r : *rules)
      texts.push_back(r.text());
#else
    auto host = hp->first.find(':') != std::string::npos ? "[" + hp->first + "]"
                                                         : hp->first;
    texts.push_back(host + ":" + std::to_string(hp->second));
#endif
  }
  for (const auto& text : opts.deny_connect) {
#if ALLOX_TRACKING
    auto r = bpf::parse_guard_rule(text);
    if (!r)
      return make_error(errc::invalid_argument,
                        "--deny-connect: " + message_of(r.error()));
    texts.push_back(r->text());
#else
    texts.push_back(text);
#endif
  }
  return texts;
}

/// What the egress broker never connects to, whatever a session's policy:
/// the refused destinations, so that proxy mode is no way around the
/// connect guard. Loopback stands for all of 127.0.0.0/8, as in the
/// guard's programs.
expected<std::vector<net::rule>> daemon_destinations(const options& opts) {
  auto texts = refused_destinations(opts);
  if (!texts)
    return texts.error();
  std::vector<net::rule> out;
  for (auto text : *texts) {
    if (text.rfind("127.0.0.1:", 0) == 0)
      text = "127.0.0.0/8" + text.substr(9);
    auto r = net::parse_rule(text);
    if (!r)
      return make_error(errc::invalid_argument,
                        "--deny-connect: " + message_of(r.error()));
    out.push_back(std::move(*r));
  }
  return out;
}

/// Attaches the connect guard to the runs' cgroup subtree: the RPC and
/// metrics addresses and --deny-connect are out of every run's reach
/// from before the daemon listens until it exits.
expected<guard_handle> guard_connections(const options& opts,
                                         const std::string& cgroup_root) {
  if (opts.connect_guard == "off") {
    log::warn("daemon", "--connect-guard off: runs can reach the daemon's "
                        "own addresses");
    return guard_handle{};
  }
#if ALLOX_TRACKING
  auto texts = refused_destinations(opts);
  if (!texts)
    return texts.error();
  std::vector<bpf::guard_rule> rules;
  for (const auto& text : *texts) {
    auto r = bpf::parse_guard_rule(text);
    if (!r)
      return r.error();
    rules.push_back(*r);
  }
  auto guard = bpf::connect_guard::attach(cgroup_root, rules);
  if (!guard)
    return make_error(errc::unsupported,
                      message_of(guard.error()) +
                          " (--connect-guard off runs without it)");
  std::string list;
  for (const auto& r : (*guard)->rules())
    list += (list.empty() ? "" : ", ") + r.text();
  log::info("daemon", "connect guard: runs cannot reach " + list);
  return std::move(*guard);
#else
  (void)cgroup_root;
  return make_error(errc::unsupported,
                    "the connect guard needs a daemon built with BPF; pass "
                    "--connect-guard off to run without it");
#endif
}

} // namespace allox::daemon
