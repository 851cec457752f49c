// SPDX-License-Identifier: Apache-2.0
#include "guest/net/egress_rules.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace allox::net {
namespace {

caf::error bad_rule(const std::string& text, const std::string& why) {
  return make_error(errc::invalid_argument,
                    "egress rule \"" + text + "\": " + why);
}

/// 0..65535 digits only; false otherwise.
bool parse_port(const std::string& s, uint16_t& out) {
  if (s.empty() || s.size() > 5 || !std::all_of(s.begin(), s.end(), [](char c) {
        return c >= '0' && c <= '9';
      }))
    return false;
  auto v = std::stoul(s);
  if (v < 1 || v > 65535)
    return false;
  out = static_cast<uint16_t>(v);
  return true;
}

prefix v4_prefix(uint8_t a, uint8_t b, uint8_t c, uint8_t d, int len) {
  prefix p;
  p.base.v4 = true;
  p.base.bytes[10] = p.base.bytes[11] = 0xff;
  p.base.bytes[12] = a;
  p.base.bytes[13] = b;
  p.base.bytes[14] = c;
  p.base.bytes[15] = d;
  p.len = 96 + len;
  return p;
}

prefix v6_prefix(std::initializer_list<uint8_t> lead, int len) {
  prefix p;
  std::copy(lead.begin(), lead.end(), p.base.bytes.begin());
  p.len = len;
  return p;
}

} // namespace

// -- addresses ----------------------------------------------------------------

/// The 128-bit form of an in_addr (4 bytes) or in6_addr (16 bytes); an
/// IPv4-mapped IPv6 address is the IPv4 address.
static address address_of(const void* raw, size_t size) {
  address a;
  if (size == 4) {
    a.bytes[10] = a.bytes[11] = 0xff;
    std::memcpy(&a.bytes[12], raw, 4);
  } else {
    std::memcpy(a.bytes.data(), raw, 16);
  }
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  a.v4 = std::memcmp(a.bytes.data(), mapped, 12) == 0;
  return a;
}

bool address::parse(const std::string& text, address& out) {
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1)
    out = address_of(&v4, 4);
  else if (::inet_pton(AF_INET6, text.c_str(), &v6) == 1)
    out = address_of(&v6, 16);
  else
    return false;
  return true;
}

address address::from(const sockaddr* sa) {
  if (sa->sa_family == AF_INET)
    return address_of(&reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
  if (sa->sa_family == AF_INET6)
    return address_of(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr,
                      16);
  return address{};
}

std::string address::text() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (v4)
    ::inet_ntop(AF_INET, &bytes[12], buf, sizeof(buf));
  else
    ::inet_ntop(AF_INET6, bytes.data(), buf, sizeof(buf));
  return buf;
}

bool prefix::contains(const address& a) const {
  int full = len / 8;
  if (std::memcmp(a.bytes.data(), base.bytes.data(), full) != 0)
    return false;
  int rest = len % 8;
  if (rest == 0)
    return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a.bytes[full] & mask) == (base.bytes[full] & mask);
}

bool special_purpose(const address& a) {
  static const prefix ranges[] = {
      v4_prefix(0, 0, 0, 0, 8),                // "this network", unspecified
      v4_prefix(10, 0, 0, 0, 8),               // private
      v4_prefix(100, 64, 0, 0, 10),            // shared address space (CGNAT)
      v4_prefix(127, 0, 0, 0, 8),              // loopback
      v4_prefix(169, 254, 0, 0, 16),           // link-local (cloud metadata)
      v4_prefix(172, 16, 0, 0, 12),            // private
      v4_prefix(192, 0, 0, 0, 24),             // IETF protocol assignments
      v4_prefix(192, 168, 0, 0, 16),           // private
      v4_prefix(198, 18, 0, 0, 15),            // benchmarking
      v4_prefix(224, 0, 0, 0, 4),              // multicast
      v4_prefix(240, 0, 0, 0, 4),              // reserved, broadcast
      v6_prefix({}, 127),                      // :: and ::1
      v6_prefix({0x00, 0x64, 0xff, 0x9b}, 96), // NAT64 onto IPv4
      v6_prefix({0xfc}, 7),                    // unique local
      v6_prefix({0xfe, 0x80}, 10),             // link-local
      v6_prefix({0xfe, 0xc0}, 10),             // site-local (deprecated)
      v6_prefix({0xff}, 8),                    // multicast
  };
  return std::any_of(std::begin(ranges), std::end(ranges),
                     [&](const prefix& p) { return p.contains(a); });
}

std::vector<address> local_addresses() {
  std::vector<address> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0)
    return out;
  for (auto* i = list; i != nullptr; i = i->ifa_next)
    if (i->ifa_addr != nullptr && (i->ifa_addr->sa_family == AF_INET ||
                                   i->ifa_addr->sa_family == AF_INET6))
      out.push_back(address::from(i->ifa_addr));
  ::freeifaddrs(list);
  return out;
}

// -- rules --------------------------------------------------------------------

std::string normal_host(const std::string& host) {
  std::string h = host;
  if (!h.empty() && h.back() == '.')
    h.pop_back();
  if (h.empty() || h.size() > 253)
    return {};
  size_t label = 0;
  for (auto& c : h) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (c == '.') {
      if (label == 0)
        return {};
      label = 0;
      continue;
    }
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
      return {};
    if (++label > 63)
      return {};
  }
  return label == 0 ? std::string{} : h;
}

bool rule::matches_name(const std::string& host) const {
  switch (what) {
  case kind::any:
    return true;
  case kind::name:
    return host == name;
  case kind::suffix:
    return host.size() > name.size() &&
           host.compare(host.size() - name.size(), name.size(), name) == 0;
  case kind::cidr:
    return false;
  }
  return false;
}

bool rule::matches_address(const address& a) const {
  return what == kind::cidr && range.contains(a);
}

expected<rule> parse_rule(const std::string& input) {
  std::string text = input;
  text.erase(std::remove_if(text.begin(), text.end(),
                            [](unsigned char c) { return std::isspace(c); }),
             text.end());
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return bad_rule(input, "expected HOST:PORT (PORT a number, a range "
                           "N-M or *)");
  std::string host = text.substr(0, colon);
  std::string ports = text.substr(colon + 1);
  rule r;
  if (ports == "*") {
    r.port_low = 1;
    r.port_high = 65535;
  } else if (auto dash = ports.find('-'); dash != std::string::npos) {
    if (!parse_port(ports.substr(0, dash), r.port_low) ||
        !parse_port(ports.substr(dash + 1), r.port_high) ||
        r.port_low > r.port_high)
      return bad_rule(input, "bad port range " + ports);
  } else if (parse_port(ports, r.port_low)) {
    r.port_high = r.port_low;
  } else {
    return bad_rule(input, "bad port " + ports);
  }
  // An address or range: a.b.c.d[/n] or [v6[/n]].
  std::string addr = host;
  bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
  if (bracketed)
    addr = host.substr(1, host.size() - 2);
  int len = -1;
  if (auto slash = addr.find('/'); slash != std::string::npos) {
    auto bits = addr.substr(slash + 1);
    if (bits.empty() || bits.size() > 3 ||
        !std::all_of(bits.begin(), bits.end(), ::isdigit))
      return bad_rule(input, "bad prefix length /" + bits);
    len = std::stoi(bits);
    addr = addr.substr(0, slash);
  }
  address a;
  if (address::parse(addr, a)) {
    if (!a.v4 && !bracketed)
      return bad_rule(input, "write an IPv6 address in brackets: [" + addr +
                                 "]:" + ports);
    int max = a.v4 ? 32 : 128;
    if (len > max)
      return bad_rule(input, "prefix length over /" + std::to_string(max));
    r.what = rule::kind::cidr;
    r.range.base = a;
    r.range.len = (a.v4 ? 96 : 0) + (len < 0 ? max : len);
    r.text = (bracketed ? "[" : "") + a.text() +
             (len < 0 ? "" : "/" + std::to_string(len)) +
             (bracketed ? "]" : "") + ":" + ports;
    return r;
  }
  if (len >= 0 || bracketed)
    return bad_rule(input, "not an IP address: " + addr);
  if (host == "*") {
    r.what = rule::kind::any;
  } else if (host.rfind("*.", 0) == 0) {
    auto rest = normal_host(host.substr(2));
    if (rest.empty())
      return bad_rule(input, "not a host name: " + host);
    r.what = rule::kind::suffix;
    r.name = "." + rest;
  } else {
    auto name = normal_host(host);
    if (name.empty())
      return bad_rule(input, "not a host name: " + host +
                                 " (wildcards only as a leading *.)");
    r.name = std::move(name);
  }
  r.text = (r.what == rule::kind::any      ? std::string{"*"}
            : r.what == rule::kind::suffix ? "*" + r.name
                                           : r.name) +
           ":" + ports;
  return r;
}

// -- the policy ---------------------------------------------------------------

expected<egress_policy>
egress_policy::parse(const std::vector<std::string>& allow,
                     const std::vector<std::string>& deny) {
  egress_policy p;
  for (auto [texts, into] : {std::pair{&allow, &p.allow}, {&deny, &p.deny}})
    for (const auto& t : *texts) {
      auto r = parse_rule(t);
      if (!r)
        return r.error();
      into->push_back(std::move(*r));
    }
  return p;
}

decision egress_policy::check_name(const std::string& host,
                                   uint16_t port) const {
  address literal;
  bool is_literal = address::parse(host, literal);
  for (const auto& r : deny)
    if (r.covers_port(port) &&
        (is_literal ? r.matches_address(literal) || r.what == rule::kind::any
                    : r.matches_name(host)))
      return {false, "denied by " + r.text, r.text};
  for (const auto& r : allow) {
    if (!r.covers_port(port))
      continue;
    bool hit = is_literal
                   ? r.matches_address(literal) || r.what == rule::kind::any
                   : r.matches_name(host);
    if (hit)
      return {true, {}, r.text};
  }
  // An address rule may still cover what the name resolves to.
  for (const auto& r : allow)
    if (!is_literal && r.what == rule::kind::cidr && r.covers_port(port))
      return {true, {}, {}};
  return {false, "not on the egress allowlist", {}};
}

decision egress_policy::check_address(const std::string& host, uint16_t port,
                                      const address& a,
                                      const std::vector<address>& own) const {
  for (const auto& r : deny)
    if (r.covers_port(port) && r.matches_address(a))
      return {false, "denied by " + r.text, r.text};
  for (const auto& r : allow)
    if (r.covers_port(port) && r.matches_address(a))
      return {true, {}, r.text};
  address literal;
  bool is_literal = address::parse(host, literal);
  const rule* by_name = nullptr;
  for (const auto& r : allow)
    if (r.covers_port(port) &&
        (r.what == rule::kind::any || (!is_literal && r.matches_name(host)))) {
      by_name = &r;
      break;
    }
  if (by_name == nullptr)
    return {false, "not on the egress allowlist", {}};
  if (special_purpose(a) || std::find(own.begin(), own.end(), a) != own.end())
    return {false,
            a.text() + " is a private, local or special-purpose address: "
                       "allow it with an address rule",
            by_name->text};
  return {true, {}, by_name->text};
}

std::vector<std::string> egress_policy::allow_texts() const {
  std::vector<std::string> out;
  for (const auto& r : allow)
    out.push_back(r.text);
  return out;
}

std::vector<std::string> egress_policy::deny_texts() const {
  std::vector<std::string> out;
  for (const auto& r : deny)
    out.push_back(r.text);
  return out;
}

} // namespace allox::net
