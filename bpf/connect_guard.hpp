// SPDX-License-Identifier: Apache-2.0
// The connect guard, user space: loads bpf/connect_guard.bpf.c and
// attaches its connect4/connect6 programs to the cgroup subtree every run
// lives in, with the destinations sandboxed processes may never reach
// (docs/security.md, "The control plane out of reach"). The programs stay
// attached for the lifetime of the connect_guard object; the daemon holds
// it from before it listens until it exits.
#pragma once

#include "messages/errors.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct allox_connect_guard; // the generated skeleton

namespace allox::bpf {

/// A refused destination: an address and a port (0: every port).
struct guard_rule {
  /// 4 or 6.
  uint8_t family = 4;
  /// Network byte order; IPv4 in the first four bytes.
  std::array<uint8_t, 16> addr{};
  uint16_t port = 0;

  /// "127.0.0.1:8092", "[::1]:*".
  std::string text() const;
  bool operator==(const guard_rule& o) const {
    return family == o.family && addr == o.addr && port == o.port;
  }
};

/// Parses "ADDR:PORT" with ADDR an IPv4 address or a bracketed IPv6
/// one and PORT 1..65535 or `*` (every port).
expected<guard_rule> parse_guard_rule(std::string_view text);

/// The rules that keep runs from reaching a socket listening on
/// host:port. A wildcard host (0.0.0.0, ::) is reached through every
/// address of the machine: one rule per address of every interface, plus
/// loopback. As the programs do, loopback is normalised (127.0.0.1, ::1).
expected<std::vector<guard_rule>> listen_rules(const std::string& host,
                                               uint16_t port);

class connect_guard {
public:
  /// Loads the programs with `rules` and attaches them to the cgroup
  /// directory `cgroup` (and so to every group below it). Needs root.
  static expected<std::unique_ptr<connect_guard>>
  attach(const std::string& cgroup, std::vector<guard_rule> rules);

  connect_guard(const connect_guard&) = delete;
  connect_guard& operator=(const connect_guard&) = delete;
  ~connect_guard();

  const std::vector<guard_rule>& rules() const { return rules_; }

  /// Connections refused since the programs were attached.
  uint64_t refusals() const;

private:
  connect_guard() = default;

  allox_connect_guard* skel_ = nullptr;
  std::vector<guard_rule> rules_;
};

} // namespace allox::bpf
