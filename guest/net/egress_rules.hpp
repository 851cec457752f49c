// SPDX-License-Identifier: Apache-2.0
// A session's egress policy in `proxy` network mode: which destinations
// its broker may connect to (session.configure {egress: {allow, deny}}).
//
//   rule     := host ":" ports
//   host     := name | "*." suffix | "*" | IPv4 ["/" len] | "[" IPv6 ["/" len]
//   "]" ports    := N | N "-" M | "*"
//
// A connection is allowed when no deny rule matches it and an allow rule
// does; nothing is allowed by default. Names are matched on what the
// sandbox asked for, addresses on what the broker resolved (the sandbox's
// own DNS is never consulted, so a name cannot be made to point anywhere
// the policy does not already permit). Loopback, private, link-local,
// shared (CGNAT), multicast and unspecified ranges, and the guest's own
// addresses, are "protected": a name rule never reaches them, only an
// address rule that covers them does. That keeps "*.example.org:443" from
// reaching the guest's metadata services through a name that resolves to
// one (DNS rebinding).
#pragma once

#include "messages/errors.hpp"

#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace allox::net {

/// An IPv4 or IPv6 address; IPv4 is kept as ::ffff:a.b.c.d so one prefix
/// comparison serves both.
struct address {
  std::array<uint8_t, 16> bytes{};
  bool v4 = false;

  static bool parse(const std::string& text, address& out);
  static address from(const sockaddr* sa);
  std::string text() const;
  bool operator==(const address& o) const { return bytes == o.bytes; }
};

/// A prefix of `len` bits (of the 128-bit form).
struct prefix {
  address base;
  int len = 128;
  bool contains(const address& a) const;
};

struct rule {
  enum class kind { name, suffix, any, cidr };
  kind what = kind::name;
  /// kind::name: the lower-case name; kind::suffix: ".example.org".
  std::string name;
  prefix range;
  uint16_t port_low = 1;
  uint16_t port_high = 65535;
  /// As written (normalised), for audits and errors.
  std::string text;

  bool covers_port(uint16_t port) const {
    return port >= port_low && port <= port_high;
  }
  bool matches_name(const std::string& host) const;
  bool matches_address(const address& a) const;
};

/// Parses one rule; invalid_argument naming the problem.
expected<rule> parse_rule(const std::string& text);

/// A normalised host name (lower case, no trailing dot) if `host` is a
/// valid DNS name; empty otherwise.
std::string normal_host(const std::string& host);

/// True for loopback, private (RFC 1918, ULA), link-local, shared address
/// space, multicast, unspecified and other special-purpose ranges.
bool special_purpose(const address& a);

struct decision {
  bool allowed = false;
  /// Why not (for the audit and the proxy's 403 body).
  std::string reason;
  /// The rule that allowed or denied it.
  std::string rule;
};

class egress_policy {
public:
  std::vector<rule> allow;
  std::vector<rule> deny;

  /// Parses both lists; the first bad rule is the error.
  static expected<egress_policy> parse(const std::vector<std::string>& allow,
                                       const std::vector<std::string>& deny);

  /// Before resolving: a name or literal refused outright by a deny rule,
  /// or matched by no allow rule at all (name or address), needs no DNS.
  decision check_name(const std::string& host, uint16_t port) const;

  /// One resolved address of `host`: `own` are the guest's addresses.
  decision check_address(const std::string& host, uint16_t port,
                         const address& a,
                         const std::vector<address>& own) const;

  std::vector<std::string> allow_texts() const;
  std::vector<std::string> deny_texts() const;
};

/// The guest's own interface addresses (getifaddrs).
std::vector<address> local_addresses();

} // namespace allox::net
